package dev.gpucompute.sample.web;

import java.net.URI;
import java.time.Duration;

import jakarta.servlet.http.HttpServletRequest;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpStatus;
import org.springframework.http.HttpStatusCode;
import org.springframework.http.MediaType;
import org.springframework.http.ProblemDetail;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.bind.annotation.RestControllerAdvice;
import org.springframework.web.context.request.ServletWebRequest;
import org.springframework.web.context.request.WebRequest;
import org.springframework.web.servlet.mvc.method.annotation.ResponseEntityExceptionHandler;

import dev.gpucompute.BatchQueueFullException;
import dev.gpucompute.BatchTimeoutException;
import dev.gpucompute.ContextClosedException;
import dev.gpucompute.GpuException;
import dev.gpucompute.PoolExhaustedException;
import dev.gpucompute.PoolTooSmallException;
import dev.gpucompute.StagingExhaustedException;
import dev.gpucompute.sample.search.ServiceProblem;

/**
 * Answers every error as an RFC 9457 problem detail ({@code application/problem+json}): the
 * service's own {@link ServiceProblem}s with their status, type, properties and {@code Retry-After}
 * (storage failures: 507 for a full disk, 503 for the rest; see the store), Spring MVC's
 * errors (405, 415, ...) through {@link ResponseEntityExceptionHandler}, and GPU failures as 503
 * (pool or staging memory exhausted, search queue full or timed out, with {@code Retry-After};
 * shutting down) or 500
 * (a stream pool too small for the configured search parallelism, naming the setting; any other GPU
 * failure).
 */
@RestControllerAdvice
class ProblemDetailsAdvice extends ResponseEntityExceptionHandler {

	/** Problem types are URNs: unique and stable, without pretending to be a web page. */
	static final String TYPE_PREFIX = "urn:gpu-compute:sample:problem:";

	private static final Logger log = LoggerFactory.getLogger(ProblemDetailsAdvice.class);

	@ExceptionHandler(ServiceProblem.class)
	ResponseEntity<ProblemDetail> serviceProblem(ServiceProblem problem, HttpServletRequest request) {
		ProblemDetail body = ProblemDetail.forStatusAndDetail(HttpStatus.valueOf(problem.status()), problem.detail());
		body.setType(URI.create(TYPE_PREFIX + problem.type()));
		body.setTitle(problem.title());
		problem.properties().forEach(body::setProperty);
		ResponseEntity<ProblemDetail> response = respond(body, request);
		return problem.retryAfter()
			.map((after) -> ResponseEntity.status(response.getStatusCode())
				.headers(response.getHeaders())
				.header(HttpHeaders.RETRY_AFTER, Long.toString(retryAfterSeconds(after)))
				.body(body))
			.orElse(response);
	}

	@ExceptionHandler(PoolExhaustedException.class)
	ResponseEntity<ProblemDetail> poolExhausted(PoolExhaustedException ex, HttpServletRequest request) {
		return respond(problem(HttpStatus.SERVICE_UNAVAILABLE, "busy", "GPU stream pool exhausted", ex.getMessage()),
				request);
	}

	/**
	 * A copy found no page-locked staging memory within {@code gpu.copies.staging-timeout}: a busy GPU,
	 * like an exhausted stream pool (retrying later helps), not a failure of the GPU.
	 */
	@ExceptionHandler(StagingExhaustedException.class)
	ResponseEntity<ProblemDetail> stagingExhausted(StagingExhaustedException ex, HttpServletRequest request) {
		return respond(problem(HttpStatus.SERVICE_UNAVAILABLE, "busy", "GPU staging memory exhausted", ex.getMessage()),
				request);
	}

	/**
	 * The search batcher's queue is full: 503 with {@code Retry-After} (whole seconds, at least 1)
	 * from the batcher's estimate of when its queue will have room.
	 */
	@ExceptionHandler(BatchQueueFullException.class)
	ResponseEntity<ProblemDetail> queueFull(BatchQueueFullException ex, HttpServletRequest request) {
		long seconds = retryAfterSeconds(ex.retryAfter());
		ProblemDetail body = problem(HttpStatus.SERVICE_UNAVAILABLE, "busy", "Search queue full", ex.getMessage());
		body.setProperty("retryAfterSeconds", seconds);
		body.setProperty("maxQueued", ex.maxQueued());
		return ResponseEntity.status(HttpStatus.SERVICE_UNAVAILABLE)
			.header(HttpHeaders.RETRY_AFTER, Long.toString(seconds))
			.contentType(MediaType.APPLICATION_PROBLEM_JSON)
			.body(withInstance(body, request));
	}

	/** A search waited in the batcher's queue past gpu.batching.search.timeout, and was not run: 503. */
	@ExceptionHandler(BatchTimeoutException.class)
	ResponseEntity<ProblemDetail> queueTimeout(BatchTimeoutException ex, HttpServletRequest request) {
		ProblemDetail body = problem(HttpStatus.SERVICE_UNAVAILABLE, "busy", "Search queue timeout", ex.getMessage());
		body.setProperty("retryAfterSeconds", 1);
		return ResponseEntity.status(HttpStatus.SERVICE_UNAVAILABLE)
			.header(HttpHeaders.RETRY_AFTER, "1")
			.contentType(MediaType.APPLICATION_PROBLEM_JSON)
			.body(withInstance(body, request));
	}

	/**
	 * Work that asked the pool for more streams than it may ever lease at once (the search caps its
	 * groups at the pool's limits, so only a configuration this service does not expect reaches it):
	 * the service's configuration, so a 500 that names the setting, without {@code Retry-After}.
	 */
	@ExceptionHandler(PoolTooSmallException.class)
	ResponseEntity<ProblemDetail> poolTooSmall(PoolTooSmallException ex, HttpServletRequest request) {
		log.error("Stream pool too small while serving {} {}", request.getMethod(), request.getRequestURI(), ex);
		ProblemDetail body = problem(HttpStatus.INTERNAL_SERVER_ERROR, "pool-too-small", "GPU stream pool too small",
				"The search needs " + ex.demand() + ", but the service's GPU stream pool leases at most "
						+ ex.maxLeasable() + " at once (" + ex.property() + "); the service's configuration must change");
		body.setProperty("setting", ex.property());
		return respond(body, request);
	}

	@ExceptionHandler(ContextClosedException.class)
	ResponseEntity<ProblemDetail> contextClosed(ContextClosedException ex, HttpServletRequest request) {
		return respond(problem(HttpStatus.SERVICE_UNAVAILABLE, "shutting-down", "Shutting down", ex.getMessage()),
				request);
	}

	@ExceptionHandler(java.io.UncheckedIOException.class)
	ResponseEntity<ProblemDetail> storageFailure(java.io.UncheckedIOException ex, HttpServletRequest request) {
		log.error("Storage failure while serving {} {}", request.getMethod(), request.getRequestURI(), ex);
		return respond(problem(HttpStatus.INTERNAL_SERVER_ERROR, "storage-failure", "Storage failure",
				ex.getMessage() + ": " + ex.getCause().getMessage()), request);
	}

	@ExceptionHandler(GpuException.class)
	ResponseEntity<ProblemDetail> gpuFailure(GpuException ex, HttpServletRequest request) {
		log.error("GPU failure while serving {} {}", request.getMethod(), request.getRequestURI(), ex);
		return respond(problem(HttpStatus.INTERNAL_SERVER_ERROR, "gpu-failure", "GPU failure", ex.getMessage()),
				request);
	}

	/**
	 * Anything else: a 500 in the service's format, without internals in the answer (the log has
	 * them). Spring MVC's own exceptions keep their more specific handlers.
	 */
	@ExceptionHandler(Exception.class)
	ResponseEntity<ProblemDetail> unexpected(Exception ex, HttpServletRequest request) {
		log.error("Unexpected failure while serving {} {}", request.getMethod(), request.getRequestURI(), ex);
		return respond(problem(HttpStatus.INTERNAL_SERVER_ERROR, "internal-error", "Internal error",
				"The request failed unexpectedly (" + ex.getClass().getSimpleName() + "); the service log has the details"),
				request);
	}

	/**
	 * Spring MVC's own errors (405, 406, 415, a bad query parameter, no such path, ...) get the
	 * service's problem type ({@value #TYPE_PREFIX} plus the status's reason as a slug) and the
	 * request path as instance, like every other problem of the service.
	 */
	@Override
	protected ResponseEntity<Object> handleExceptionInternal(Exception ex, Object body, HttpHeaders headers,
			HttpStatusCode statusCode, WebRequest request) {
		ResponseEntity<Object> response = super.handleExceptionInternal(ex, body, headers, statusCode, request);
		if (response != null && response.getBody() instanceof ProblemDetail problem) {
			HttpStatus status = HttpStatus.resolve(statusCode.value());
			String slug = (status != null) ? status.getReasonPhrase().toLowerCase(java.util.Locale.ROOT)
				.replaceAll("[^a-z0-9]+", "-") : "http-" + statusCode.value();
			problem.setType(URI.create(TYPE_PREFIX + slug));
			if (problem.getInstance() == null && request instanceof ServletWebRequest servlet) {
				problem.setInstance(URI.create(servlet.getRequest().getRequestURI()));
			}
		}
		return response;
	}

	/** A {@code Retry-After} header's value: whole seconds, rounded up, at least 1. */
	private static long retryAfterSeconds(Duration after) {
		return Math.max(1, (after.toMillis() + 999) / 1000);
	}

	private static ProblemDetail problem(HttpStatus status, String type, String title, String detail) {
		ProblemDetail body = ProblemDetail.forStatusAndDetail(status, detail);
		body.setType(URI.create(TYPE_PREFIX + type));
		body.setTitle(title);
		return body;
	}

	private static ResponseEntity<ProblemDetail> respond(ProblemDetail body, HttpServletRequest request) {
		return ResponseEntity.status(body.getStatus())
			.contentType(MediaType.APPLICATION_PROBLEM_JSON)
			.body(withInstance(body, request));
	}

	private static ProblemDetail withInstance(ProblemDetail body, HttpServletRequest request) {
		body.setInstance(URI.create(request.getRequestURI()));
		return body;
	}

}
