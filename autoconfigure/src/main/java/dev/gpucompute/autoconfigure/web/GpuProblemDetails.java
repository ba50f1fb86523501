package dev.gpucompute.autoconfigure.web;

import java.net.URI;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.function.Function;

import org.jspecify.annotations.Nullable;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.http.ProblemDetail;
import org.springframework.http.ResponseEntity;

import dev.gpucompute.ContextClosedException;
import dev.gpucompute.GpuException;
import dev.gpucompute.GpuOutOfMemoryException;
import dev.gpucompute.KernelLaunchException;
import dev.gpucompute.PoolExhaustedException;
import dev.gpucompute.PoolTooSmallException;
import dev.gpucompute.StagingExhaustedException;
import dev.gpucompute.batch.BatchQueueFullException;
import dev.gpucompute.batch.BatchTimeoutException;

/**
 * What an HTTP client is told about a GPU failure: an RFC 9457 problem detail with the status that
 * fits it, and nothing of the server's internals (no stack, no device state, no stream names; the
 * server log has those). Used by {@link GpuExceptionHandler} for Spring MVC and WebFlux alike.
 *
 * <table>
 * <caption>The mapping, most specific type first</caption>
 * <tr><th>exception</th><th>status</th><th>type</th></tr>
 * <tr><td>{@link PoolExhaustedException}</td><td>503 with {@code Retry-After}</td><td>{@code pool-exhausted}</td></tr>
 * <tr><td>{@link PoolTooSmallException}</td><td>500, naming the setting to raise</td><td>{@code pool-too-small}</td></tr>
 * <tr><td>{@link BatchQueueFullException}</td><td>503 with {@code Retry-After}</td><td>{@code batch-queue-full}</td></tr>
 * <tr><td>{@link BatchTimeoutException}</td><td>503 with {@code Retry-After}</td><td>{@code batch-timeout}</td></tr>
 * <tr><td>{@link StagingExhaustedException}</td><td>503 with {@code Retry-After}</td><td>{@code staging-exhausted}</td></tr>
 * <tr><td>{@link GpuOutOfMemoryException}</td><td>503</td><td>{@code out-of-memory}</td></tr>
 * <tr><td>{@link ContextClosedException}</td><td>503</td><td>{@code unavailable}</td></tr>
 * <tr><td>{@link KernelLaunchException}</td><td>500, naming the kernel</td><td>{@code kernel-failed}</td></tr>
 * <tr><td>any other {@link GpuException}</td><td>500</td><td>{@code gpu-failure}</td></tr>
 * </table>
 * Types are {@value #TYPE_PREFIX} followed by the name above. A {@link CompletionException} or
 * {@link ExecutionException} (what {@code future.join()} and {@code future.get()} throw) is unwrapped
 * first. {@link GpuProblemCustomizer}s given to the constructor then adjust each answer (an
 * application's titles, types, members or {@code Retry-After}). Immutable and thread-safe.
 */
public final class GpuProblemDetails {

	/** Problem types are URNs: unique and stable, without pretending to be a web page. */
	public static final String TYPE_PREFIX = "urn:gpu-compute:problem:";

	private static final boolean RETRY = true;

	private static final boolean NO_RETRY = false;

	/** Most specific first: the first mapping whose type matches answers. */
	private static final List<Mapping<?>> MAPPINGS = List.of(
			new Mapping<>(PoolExhaustedException.class, HttpStatus.SERVICE_UNAVAILABLE, "pool-exhausted", "GPU busy",
					RETRY, (ex) -> "Every GPU stream is in use; retry later."),
			// A group of streams the pool can never lease at once: the service's configuration, not the
			// request and not a busy moment, so a 500 without Retry-After (retrying cannot help).
			new Mapping<>(PoolTooSmallException.class, HttpStatus.INTERNAL_SERVER_ERROR, "pool-too-small",
					"GPU stream pool too small", NO_RETRY,
					(ex) -> "The request needs " + ex.demand() + ", but the service's GPU stream pool leases at most "
							+ ex.maxLeasable() + " at once (" + ex.property()
							+ "); the service's configuration must change, retrying will not help."),
			new Mapping<>(BatchQueueFullException.class, HttpStatus.SERVICE_UNAVAILABLE, "batch-queue-full",
					"GPU busy", RETRY, (ex) -> "The GPU batch queue is full; retry later."),
			new Mapping<>(BatchTimeoutException.class, HttpStatus.SERVICE_UNAVAILABLE, "batch-timeout", "GPU busy",
					RETRY, (ex) -> "The request waited too long in the GPU batch queue; retry later."),
			new Mapping<>(StagingExhaustedException.class, HttpStatus.SERVICE_UNAVAILABLE, "staging-exhausted",
					"GPU busy", RETRY, (ex) -> "Every GPU copy buffer is in use; retry later."),
			new Mapping<>(GpuOutOfMemoryException.class, HttpStatus.SERVICE_UNAVAILABLE, "out-of-memory",
					"GPU out of memory", NO_RETRY, (ex) -> "The GPU has not enough free memory for this request."),
			new Mapping<>(ContextClosedException.class, HttpStatus.SERVICE_UNAVAILABLE, "unavailable",
					"GPU unavailable", NO_RETRY, (ex) -> "The GPU is shutting down or unusable."),
			new Mapping<>(KernelLaunchException.class, HttpStatus.INTERNAL_SERVER_ERROR, "kernel-failed",
					"GPU kernel failed", NO_RETRY, (ex) -> "GPU kernel '" + ex.kernelName() + "' failed."),
			new Mapping<>(GpuException.class, HttpStatus.INTERNAL_SERVER_ERROR, "gpu-failure", "GPU failure",
					NO_RETRY, (ex) -> "The GPU operation failed."));

	private final Duration retryAfter;

	private final List<GpuProblemCustomizer> customizers;

	/**
	 * Problem details that ask clients to retry a busy GPU after {@code retryAfter}.
	 * @param retryAfter the {@code Retry-After} of 503 answers for a busy GPU, rounded up to whole
	 * seconds (at least 1)
	 */
	public GpuProblemDetails(Duration retryAfter) {
		this(retryAfter, List.of());
	}

	/**
	 * Problem details that ask clients to retry a busy GPU after {@code retryAfter}, each answer
	 * adjusted by {@code customizers}.
	 * @param retryAfter the {@code Retry-After} of 503 answers for a busy GPU, rounded up to whole
	 * seconds (at least 1)
	 * @param customizers applied to every answer, in this order, after the mapping; copied
	 */
	public GpuProblemDetails(Duration retryAfter, List<GpuProblemCustomizer> customizers) {
		this.retryAfter = retryAfter;
		this.customizers = List.copyOf(customizers);
	}

	/**
	 * The answer to {@code failure}, or {@code null} when it is no GPU failure once
	 * {@link CompletionException}s and {@link ExecutionException}s are unwrapped. A new answer on
	 * each call, adjusted by the customizers.
	 * @param failure what a request handler threw
	 * @return the problem, with its status, headers and the unwrapped failure
	 */
	public @Nullable GpuProblem problemFor(Throwable failure) {
		Throwable unwrapped = unwrap(failure);
		for (Mapping<?> mapping : MAPPINGS) {
			if (mapping.type().isInstance(unwrapped)) {
				GpuProblem problem = mapping.problem(unwrapped, this.retryAfter);
				for (GpuProblemCustomizer customizer : this.customizers) {
					customizer.customize(problem);
				}
				return problem;
			}
		}
		return null;
	}

	/** Strips {@link CompletionException} and {@link ExecutionException} wrappers. */
	static Throwable unwrap(Throwable failure) {
		Throwable current = failure;
		while ((current instanceof CompletionException || current instanceof ExecutionException)
				&& current.getCause() != null) {
			current = current.getCause();
		}
		return current;
	}

	/** A {@code Retry-After} header's value: whole seconds, rounded up, at least 1. */
	static String retryAfterSeconds(Duration after) {
		return Long.toString(Math.max(1, (after.toMillis() + 999) / 1000));
	}

	/**
	 * The answer to one GPU failure. Its body and headers are mutable, for
	 * {@link GpuProblemCustomizer}s; the status answered is the body's.
	 *
	 * @param body the problem detail (status, type, title, detail; {@code kernel} for a kernel failure)
	 * @param headers {@code Retry-After} when the client should retry
	 * @param failure the GPU failure, unwrapped, for the server's log (and for customizers to tell
	 * failures apart)
	 */
	public record GpuProblem(ProblemDetail body, HttpHeaders headers, GpuException failure) {

		/**
		 * Sets {@code Retry-After} to {@code after} in whole seconds, rounded up, at least 1: for a
		 * customizer with a better estimate than {@code gpu.problem-details.retry-after} (a
		 * {@link BatchQueueFullException#retryAfter()}, say), or one that asks for retries where the
		 * mapping does not.
		 * @param after when the client should retry
		 */
		public void setRetryAfter(Duration after) {
			this.headers.set(HttpHeaders.RETRY_AFTER, retryAfterSeconds(after));
		}

		/** Whether this is a server fault (5xx other than 503): the log gets the stack. */
		public boolean isServerFault() {
			return this.body.getStatus() != HttpStatus.SERVICE_UNAVAILABLE.value();
		}

		/** The response: the status, the headers and the body as {@code application/problem+json}. */
		public ResponseEntity<ProblemDetail> toResponseEntity() {
			return ResponseEntity.status(this.body.getStatus())
				.headers(this.headers)
				.contentType(MediaType.APPLICATION_PROBLEM_JSON)
				.body(this.body);
		}

	}

	private record Mapping<T extends GpuException>(Class<T> type, HttpStatus status, String name, String title,
			boolean retry, Function<T, String> detail) {

		GpuProblem problem(Throwable failure, Duration retryAfter) {
			T gpu = this.type.cast(failure);
			ProblemDetail body = ProblemDetail.forStatusAndDetail(this.status, this.detail.apply(gpu));
			body.setType(URI.create(TYPE_PREFIX + this.name));
			body.setTitle(this.title);
			if (gpu instanceof KernelLaunchException kernel) {
				body.setProperty("kernel", kernel.kernelName());
			}
			HttpHeaders headers = new HttpHeaders();
			if (this.retry) {
				headers.set(HttpHeaders.RETRY_AFTER, retryAfterSeconds(retryAfter));
			}
			return new GpuProblem(body, headers, gpu);
		}

	}

}
