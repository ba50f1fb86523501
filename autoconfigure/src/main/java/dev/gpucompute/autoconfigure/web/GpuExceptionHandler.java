package dev.gpucompute.autoconfigure.web;

import java.util.Optional;
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
 *
 * <p>An application advice with a catch-all ({@code @ExceptionHandler(Exception.class)}) takes GPU
 * failures too, before this handler is asked: Spring takes the first advice with a matching method,
 * however general. Such a catch-all leaves GPU failures to the starter by asking
 * {@link #answer(Throwable)} first. Thread-safe.
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
		return answer(failure).orElseThrow(() -> failure);
	}

	/**
	 * This handler's answer to {@code failure}, logged as this handler logs it, for an application's
	 * own exception handler that Spring asks first: a catch-all that calls this before its own
	 * answer leaves GPU failures to the starter's mapping (and its {@link GpuProblemCustomizer}s)
	 * and keeps everything else.
	 * <pre>
	 * &#64;ExceptionHandler(Exception.class)
	 * ResponseEntity&lt;ProblemDetail&gt; unexpected(Exception ex) {
	 *     return this.gpuFailures.answer(ex).orElseGet(() -&gt; internalError(ex));
	 * }
	 * </pre>
	 * The framework sets {@code instance} to the request path, as for this handler's own answers.
	 * @param failure what a request handler threw
	 * @return the problem detail response, or empty when {@code failure} is no GPU failure once
	 * {@link CompletionException}s and {@link ExecutionException}s are unwrapped
	 */
	public Optional<ResponseEntity<ProblemDetail>> answer(Throwable failure) {
		GpuProblem problem = this.problems.problemFor(failure);
		if (problem == null) {
			return Optional.empty();
		}
		if (problem.isServerFault()) {
			logger.error("GPU failure answered with " + problem.body().getStatus(), problem.failure());
		}
		else if (logger.isWarnEnabled()) {
			logger.warn("GPU failure answered with " + problem.body().getStatus() + ": " + problem.failure());
		}
		return Optional.of(problem.toResponseEntity());
	}

}
