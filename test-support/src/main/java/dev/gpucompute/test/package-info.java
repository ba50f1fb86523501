/**
 * Support for the tests of applications that use gpu-compute, shipped in
 * {@code dev.gpucompute:gpu-compute-spring-boot-test} (a test-scoped dependency, so that
 * {@code spring-test} never reaches the application's own jar).
 */
@NullMarked
package dev.gpucompute.test;

import org.jspecify.annotations.NullMarked;
