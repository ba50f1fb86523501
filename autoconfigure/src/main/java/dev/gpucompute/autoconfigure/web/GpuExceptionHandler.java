package dev.gpucompute.autoconfigure.web;

import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;

import org.springframework.core.Ordered;
import org.springframework.core.annotation.Order;
import org.springframework.http.ProblemDetail;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.ControllerAdvice;
import org.springframework.web.bind.annotation.ExceptionHandler;

import dev.gpucompute.GpuException;
import dev.gpucompute.autoconfigure.web.GpuProblemDetails.GpuProblem;

/**
 * Answers GPU failures of request handlers as problem details ({@link GpuProblemDetails}), in
 * Spring MVC and in annotated WebFlux controllers. Ordered last: a handler of the application's
 * own wins, whether an {@code @ExceptionHandler} in the controller or a {@code @ControllerAdvice}
 * (application beans come before this one at the same order). A {@link CompletionException} or
 * {@link ExecutionException} that does not wrap a {@link GpuException} is left to the next handler.
 * The log gets one WARN line for a busy or unavailable GPU (503) and the stack for the rest.
 * Thread-safe.
 */
@ControllerAdvice
@Order(Ordered.LOWEST_PRECEDENCE)
public class GpuExceptionHandler {

	private static final Log logger = LogFactory.getLog(GpuExceptionHandler.class);

	private final GpuProblemDetails problems;

	/**
	 * A handler answering with {@code problems}.
	 * @param problems the mapping of failures to problem details
	 */
	public GpuExceptionHandler(GpuProblemDetails problems) {
		this.problems = problems;
	}

	/**
	 * The problem detail of a GPU failure.
	 * @param failure what the request handler threw
	 * @return the response
	 * @throws Exception {@code failure} itself when it is no GPU failure, so that the next handler
	 * sees it
	 */
	@ExceptionHandler({ GpuException.class, CompletionException.class, ExecutionException.class })
	public ResponseEntity<ProblemDetail> handleGpuFailure(Exception failure) throws Exception {
		GpuProblem problem = this.problems.problemFor(failure);
		if (problem == null) {
			throw failure;
		}
		if (problem.isServerFault()) {
			logger.error("GPU failure answered with " + problem.body().getStatus(), problem.failure());
		}
		else if (logger.isWarnEnabled()) {
			logger.warn("GPU failure answered with " + problem.body().getStatus() + ": " + problem.failure());
		}
		return problem.toResponseEntity();
	}

}
