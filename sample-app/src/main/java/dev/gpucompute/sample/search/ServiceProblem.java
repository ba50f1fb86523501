package dev.gpucompute.sample.search;

import java.time.Duration;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

import org.jspecify.annotations.Nullable;

import dev.gpucompute.PoolExhaustedException;
import dev.gpucompute.sample.storage.StorageFailure;

/**
 * A request the service refuses, with everything an RFC 9457 problem detail needs: HTTP status, a
 * stable type slug, a title, a human-readable detail and machine-readable properties. The web layer
 * turns it into Spring's {@code ProblemDetail}; the search core stays free of web types.
 *
 * <p>Thrown before any device resource is taken wherever the check allows it, so a refused request
 * never holds a stream, an event or a buffer.
 */
public class ServiceProblem extends RuntimeException {

	private final int status;

	private final String type;

	private final String title;

	private final Map<String, Object> properties;

	private final @Nullable Duration retryAfter;

	public ServiceProblem(int status, String type, String title, String detail, Map<String, Object> properties) {
		this(status, type, title, detail, properties, null);
	}

	/**
	 * A problem whose answer tells the client when to retry.
	 * @param retryAfter the answer's {@code Retry-After}, or {@code null} for none
	 */
	public ServiceProblem(int status, String type, String title, String detail, Map<String, Object> properties,
			@Nullable Duration retryAfter) {
		super(detail);
		this.status = status;
		this.type = type;
		this.title = title;
		this.properties = Collections.unmodifiableMap(new LinkedHashMap<>(properties));
		this.retryAfter = retryAfter;
	}

	/** The HTTP status. */
	public int status() {
		return this.status;
	}

	/** A short, stable slug naming the kind of problem, e.g. {@code unknown-collection}. */
	public String type() {
		return this.type;
	}

	public String title() {
		return this.title;
	}

	public String detail() {
		// The constructors pass the (non-null) detail on as the message, which nothing changes afterwards.
		return Objects.requireNonNull(getMessage());
	}

	/** Extra members of the problem detail (names of fields, limits, sizes). */
	public Map<String, Object> properties() {
		return this.properties;
	}

	/** When the client may retry (the answer's {@code Retry-After}), if the problem says. */
	public Optional<Duration> retryAfter() {
		return Optional.ofNullable(this.retryAfter);
	}

	// ---- the problems of this service --------------------------------------------------------

	public static ServiceProblem unknownCollection(String name) {
		return new ServiceProblem(404, "unknown-collection", "Unknown collection",
				"No collection named '" + name + "' exists", Map.of("collection", name));
	}

	public static ServiceProblem collectionConflict(String name, CollectionInfo existing, int dimension,
			Metric metric) {
		return new ServiceProblem(409, "collection-conflict", "Collection exists with another shape",
				"Collection '" + name + "' already exists with dimension " + existing.dimension() + " and metric "
						+ existing.metric().jsonName() + "; requested dimension " + dimension + " and metric "
						+ metric.jsonName(),
				Map.of("collection", name, "dimension", existing.dimension(), "metric", existing.metric().jsonName()));
	}

	public static ServiceProblem wrongDimension(String collection, String field, int expected, long actual) {
		return new ServiceProblem(400, "wrong-dimension", "Wrong vector dimension",
				field + " has " + actual + " values, but collection '" + collection + "' holds vectors of dimension "
						+ expected,
				Map.of("collection", collection, "field", field, "expected", expected, "actual", actual));
	}

	/**
	 * A binary body (little-endian float32 rows, back to back) whose length is no whole number of the
	 * collection's rows: a {@code wrong-dimension} problem of field {@code body} that says whether the
	 * bytes are not even a whole number of 4-byte values, or how many values they are.
	 */
	public static ServiceProblem bodyNotWholeRows(String collection, long bytes, int dimension) {
		Map<String, Object> properties = new LinkedHashMap<>();
		properties.put("collection", collection);
		properties.put("field", "body");
		properties.put("expected", dimension);
		properties.put("bytes", bytes);
		String rows = "collection '" + collection + "' holds vectors of dimension " + dimension + " ("
				+ (long) dimension * Float.BYTES + " bytes each)";
		String detail;
		if (bytes % Float.BYTES != 0) {
			detail = "The body's " + bytes + ((bytes == 1) ? " byte is" : " bytes are")
					+ " not a whole number of 4-byte float32 values; " + rows;
		}
		else {
			long values = bytes / Float.BYTES;
			properties.put("actual", values);
			detail = "The body's " + bytes + " bytes are " + values + " float32 value" + ((values == 1) ? "" : "s")
					+ ", not a whole number of vectors: " + rows;
		}
		return new ServiceProblem(400, "wrong-dimension", "Wrong vector dimension", detail, properties);
	}

	public static ServiceProblem kOutOfRange(String collection, int k, int size) {
		return new ServiceProblem(400, "k-out-of-range", "k out of range",
				"k must be between 1 and the collection's size (" + size + "), got " + k,
				Map.of("collection", collection, "k", k, "size", size));
	}

	public static ServiceProblem tooManyResults(int queries, int k, int limit) {
		return new ServiceProblem(400, "too-many-results", "Too many results",
				queries + " queries with k = " + k + " would return " + ((long) queries * k)
						+ " hits, more than the limit of " + limit + " per request (sample.limits.max-results)",
				Map.of("queries", queries, "k", k, "limit", limit));
	}

	public static ServiceProblem nonFinite(String field, float value) {
		return new ServiceProblem(400, "non-finite-value", "Non-finite value",
				field + " is " + value + "; vectors must contain finite numbers only", Map.of("field", field));
	}

	public static ServiceProblem invalid(String field, String detail) {
		return new ServiceProblem(400, "invalid-request", "Invalid request", detail, Map.of("field", field));
	}

	/**
	 * A body that is not JSON, or not one JSON object: an {@code invalid-request} of field
	 * {@code body}, with the 1-based {@code line} and {@code column} where reading stopped (omitted
	 * when unknown, 0).
	 */
	public static ServiceProblem malformedJson(String detail, int line, int column) {
		Map<String, Object> properties = new LinkedHashMap<>();
		properties.put("field", "body");
		if (line > 0) {
			properties.put("line", line);
			properties.put("column", column);
		}
		return new ServiceProblem(400, "invalid-request", "Invalid request", detail, properties);
	}

	public static ServiceProblem bodyTooLarge(long limit, long actual) {
		Map<String, Object> properties = new LinkedHashMap<>();
		properties.put("limit", limit);
		if (actual >= 0) {
			properties.put("actual", actual);
		}
		return new ServiceProblem(413, "body-too-large", "Request body too large",
				"The request body " + ((actual >= 0) ? "of " + actual + " bytes " : "") + "exceeds the limit of "
						+ limit + " bytes (sample.limits.max-body-size)",
				properties);
	}

	public static ServiceProblem memoryBudget(String collection, long rows, long requiredBytes, long budget,
			long inUse) {
		return new ServiceProblem(422, "memory-budget-exceeded", "Device memory budget exceeded",
				"Collection '" + collection + "' would hold " + rows + " vectors (" + requiredBytes
						+ " bytes of device memory), but only " + Math.max(0, budget - inUse) + " of the "
						+ budget + " bytes of sample.memory-budget are left",
				Map.of("collection", collection, "vectors", rows, "requiredBytes", requiredBytes, "budgetBytes",
						budget, "usedBytes", inUse));
	}

	/** The device itself had no room for a collection's storage, although the budget allowed it. */
	public static ServiceProblem deviceFull(String collection, long rows, long requiredBytes, @Nullable String reason) {
		return new ServiceProblem(422, "memory-budget-exceeded", "Device memory exhausted",
				"Collection '" + collection + "' would hold " + rows + " vectors (" + requiredBytes
						+ " bytes of device memory), but the device has no room: " + reason,
				Map.of("collection", collection, "vectors", rows, "requiredBytes", requiredBytes));
	}

	/** A search's scratch memory could not be allocated; a server condition, so 503. */
	public static ServiceProblem searchMemoryExhausted(@Nullable String reason) {
		return new ServiceProblem(503, "device-memory-exhausted", "Device memory exhausted",
				"The search's scratch memory could not be allocated: " + reason + "; retry later or with fewer queries",
				Map.of());
	}

	/**
	 * The stream pool had not enough free streams in time; a server condition, so 503.
	 * @param streams the streams the request needed at once
	 * @param waited how long it waited for them
	 * @param cause the pool's exception, kept as the cause for logs (its figures are for operators)
	 */
	public static ServiceProblem busy(int streams, java.time.Duration waited, PoolExhaustedException cause) {
		ServiceProblem problem = new ServiceProblem(503, "busy", "Search capacity exhausted",
				"No " + streams + " pooled streams became free within " + waited + "; retry later",
				Map.of("streams", streams));
		problem.initCause(cause);
		return problem;
	}

	/**
	 * The data directory refused what a request had to store, so nothing of it was stored: 507 when
	 * the file system is full (it stays so until space is freed; the service then resumes by
	 * itself), else 503 with {@code Retry-After} (an I/O failure the service recovers from by itself
	 * if the disk does: it writes a new snapshot and empties the collection's log).
	 * @param outcome the first sentence of the detail, saying what was not stored
	 * @param retryAfter when a client may retry after a 503
	 */
	public static ServiceProblem storage(String collection, String outcome, StorageFailure failure,
			Duration retryAfter) {
		Map<String, Object> properties = new LinkedHashMap<>();
		properties.put("collection", collection);
		properties.put("stored", false);
		ServiceProblem problem;
		if (failure.noSpace()) {
			problem = new ServiceProblem(507, "insufficient-storage", "Insufficient storage",
					outcome + ": the data directory's file system has no space left (" + failure.reason()
							+ "). Searches and reads go on; writes resume by themselves once space is freed.",
					properties);
		}
		else {
			long seconds = wholeSeconds(retryAfter);
			problem = new ServiceProblem(503, "storage-unavailable", "Storage unavailable",
					outcome + ": the data directory failed (" + failure.reason() + "). Searches and "
							+ "reads go on; the service recovers the collection's log by itself; retry after "
							+ seconds + " s.",
					properties, Duration.ofSeconds(seconds));
		}
		problem.initCause(failure.cause());
		return problem;
	}

	/**
	 * A write that was durable in the log, committed in the same group as one the device then
	 * refused: its record was cut off the log with that one's, so nothing of it was stored; 503.
	 */
	public static ServiceProblem notApplied(String collection, RuntimeException cause, Duration retryAfter) {
		long seconds = wholeSeconds(retryAfter);
		ServiceProblem problem = new ServiceProblem(503, "write-not-applied", "Write not applied",
				writeNotStored(collection) + ": a write committed together with it failed on the device ("
						+ cause.getMessage() + "), and both were taken back; retry after " + seconds + " s.",
				Map.of("collection", collection, "stored", false), Duration.ofSeconds(seconds));
		problem.initCause(cause);
		return problem;
	}

	/** A {@code Retry-After} in whole seconds, rounded up, at least 1. */
	private static long wholeSeconds(Duration retryAfter) {
		return Math.max(1, (retryAfter.toMillis() + 999) / 1000);
	}

	/** The detail's first sentence for a write that was refused by the storage. */
	public static String writeNotStored(String collection) {
		return "Nothing of this write was stored in collection '" + collection + "'";
	}

}
