package dev.gpucompute.sample.web;

import java.net.URI;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;

import jakarta.servlet.http.HttpServletRequest;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.springframework.beans.factory.ObjectProvider;
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

import dev.gpucompute.autoconfigure.web.GpuExceptionHandler;
import dev.gpucompute.sample.search.ServiceProblem;

/**
 * Answers every error as an RFC 9457 problem detail ({@code application/problem+json}): the
 * service's own {@link ServiceProblem}s with their status, type, properties and {@code Retry-After}
 * (storage failures: 507 for a full disk, 503 for the rest; see the store), Spring MVC's
 * errors (405, 415, ...) through {@link ResponseEntityExceptionHandler}, and anything else as a 500.
 * GPU failures (a busy GPU, a search queue full or timed out, a pool too small, ...) are the
 * starter's: its {@link GpuExceptionHandler} answers them with its types
 * ({@code urn:gpu-compute:problem:*}), as this service's {@link SampleGpuProblems} adjusts them.
 */
@RestControllerAdvice
class ProblemDetailsAdvice extends ResponseEntityExceptionHandler {

	/** Problem types are URNs: unique and stable, without pretending to be a web page. */
	static final String TYPE_PREFIX = "urn:gpu-compute:sample:problem:";

	private static final Logger log = LoggerFactory.getLogger(ProblemDetailsAdvice.class);

	private final ObjectProvider<GpuExceptionHandler> gpuFailures;

	/**
	 * @param gpuFailures the starter's GPU problem details, absent with
	 * {@code gpu.problem-details.enabled=false} (GPU failures are then answered as any other failure)
	 */
	ProblemDetailsAdvice(ObjectProvider<GpuExceptionHandler> gpuFailures) {
		this.gpuFailures = gpuFailures;
	}

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

	@ExceptionHandler(java.io.UncheckedIOException.class)
	ResponseEntity<ProblemDetail> storageFailure(java.io.UncheckedIOException ex, HttpServletRequest request) {
		log.error("Storage failure while serving {} {}", request.getMethod(), request.getRequestURI(), ex);
		// The cause is never null: an UncheckedIOException's constructors require its IOException.
		return respond(problem(HttpStatus.INTERNAL_SERVER_ERROR, "storage-failure", "Storage failure",
				ex.getMessage() + ": " + Objects.requireNonNull(ex.getCause()).getMessage()), request);
	}

	/**
	 * GPU failures, also inside a {@code CompletionException} or {@code ExecutionException}: the
	 * starter's answer ({@link GpuExceptionHandler#answer}), which this catch-all would otherwise take
	 * from it, since Spring asks this advice before the starter's handler. Anything else: a 500 in
	 * the service's format, without internals in the answer (the log has them). Spring MVC's own
	 * exceptions keep their more specific handlers.
	 */
	@ExceptionHandler(Exception.class)
	ResponseEntity<ProblemDetail> unexpected(Exception ex, HttpServletRequest request) {
		GpuExceptionHandler gpuFailures = this.gpuFailures.getIfAvailable();
		Optional<ResponseEntity<ProblemDetail>> gpu = (gpuFailures != null) ? gpuFailures.answer(ex) : Optional.empty();
		if (gpu.isPresent()) {
			return gpu.get();
		}
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
	protected @Nullable ResponseEntity<Object> handleExceptionInternal(Exception ex, @Nullable Object body,
			HttpHeaders headers, HttpStatusCode statusCode, WebRequest request) {
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
