package dev.gpucompute.autoconfigure.web;

import dev.gpucompute.autoconfigure.web.GpuProblemDetails.GpuProblem;

/**
 * Adjusts the answer {@link GpuProblemDetails} made for a GPU failure before it is sent: an
 * application's own {@code title}, {@code type}, extra members or {@code Retry-After}, while the
 * starter's mapping still decides which failures are answered and how. Declare one as a bean; the
 * auto-configured {@link GpuProblemDetails} applies every such bean to every answer, in
 * {@link org.springframework.core.annotation.Order @Order} (then registration) order, after its
 * own mapping. Without one, the answers are the starter's.
 *
 * <p>Called on request threads, concurrently: an implementation must be thread-safe. It changes
 * {@link GpuProblem#body()} and {@link GpuProblem#headers()} in place (each call gets a fresh
 * answer of its own) and should not throw: a customizer that throws leaves the failure to the
 * framework's default error handling.
 */
@FunctionalInterface
public interface GpuProblemCustomizer {

	/**
	 * Adjusts one answer.
	 * @param problem the answer to a GPU failure: its body, its headers and the (unwrapped) failure
	 */
	void customize(GpuProblem problem);

}
