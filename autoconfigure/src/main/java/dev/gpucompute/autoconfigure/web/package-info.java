/**
 * Web support: GPU failures answered as RFC 9457 problem details in Spring MVC and WebFlux.
 */
package dev.gpucompute.autoconfigure.web;
