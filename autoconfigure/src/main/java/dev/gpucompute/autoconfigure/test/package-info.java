/**
 * Support for the tests of applications that use gpu-compute.
 */
package dev.gpucompute.autoconfigure.test;
