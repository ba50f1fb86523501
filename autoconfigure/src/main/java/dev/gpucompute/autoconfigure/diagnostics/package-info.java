/**
 * Failure analyzers for the start-up errors of GPU applications: each turns an exception into a
 * description of what is wrong and an action that fixes it, shown in Spring Boot's "APPLICATION
 * FAILED TO START" report. Registered in {@code META-INF/spring.factories}.
 */
@NullMarked
package dev.gpucompute.autoconfigure.diagnostics;

import org.jspecify.annotations.NullMarked;
