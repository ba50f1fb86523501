/**
 * Web support: GPU failures answered as RFC 9457 problem details in Spring MVC and WebFlux.
 */
@NullMarked
package dev.gpucompute.autoconfigure.web;

import org.jspecify.annotations.NullMarked;
