package dev.gpucompute.sample.search;

import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.regex.Pattern;

import dev.gpucompute.sample.storage.WriteAheadLog;

/**
 * The checks the {@link CollectionStore} makes on a request's input before it takes a lock or a
 * device resource: names, dimensions, ids, vector counts and values, and the store's
 * {@link CollectionStore.Limits}. Each check throws the {@link ServiceProblem} that is answered
 * (400 with the offending field), or returns normally.
 *
 * <p>Immutable and stateless beyond its limits: safe from any thread, with or without a
 * collection's lock (only {@link #checkResults} is called under the read lock, with the size read
 * there).
 */
final class RequestChecks {

	private static final Pattern NAME = Pattern.compile("[A-Za-z0-9_-]{1,64}");

	private final CollectionStore.Limits limits;

	RequestChecks(CollectionStore.Limits limits) {
		this.limits = limits;
	}

	/** A new collection's name and dimension. */
	void checkCreate(String name, Integer dimension) {
		if (name == null || !NAME.matcher(name).matches()) {
			throw ServiceProblem.invalid("name",
					"A collection name is 1 to 64 letters, digits, '_' or '-', got '" + name + "'");
		}
		if (dimension == null) {
			throw ServiceProblem.invalid("dimension", "dimension is required");
		}
		if (dimension < 1 || dimension > this.limits.maxDimension()) {
			throw ServiceProblem.invalid("dimension", "dimension must be between 1 and " + this.limits.maxDimension()
					+ " (sample.limits.max-dimension), got " + dimension);
		}
	}

	/**
	 * A write to collection {@code name}: its ids ({@link #checkIds}), one row of {@code dimension}
	 * values per id, and the values themselves for the metric.
	 */
	void checkWrite(String name, int dimension, Metric metric, List<String> ids, float[] rows) {
		checkIds(ids, dimension);
		if (rows.length != (long) ids.size() * dimension) {
			if (rows.length % dimension != 0) {
				throw ServiceProblem.wrongDimension(name, "vectors", dimension, rows.length);
			}
			throw ServiceProblem.invalid("ids", ids.size() + " ids were given for " + (rows.length / dimension)
					+ " vectors");
		}
		Vectors.check("vectors", rows, dimension, metric);
	}

	/**
	 * Checks a write's ids, and that the write fits one log record (ids of at most
	 * {@value WriteAheadLog#MAX_ID_BYTES} UTF-8 bytes, a record under 2 GiB), so that a write the
	 * log cannot hold is refused as a bad request (400) before anything is reserved.
	 */
	void checkIds(List<String> ids, int dimension) {
		if (ids == null || ids.isEmpty()) {
			throw ServiceProblem.invalid("ids", "At least one id is required");
		}
		Set<String> seen = new HashSet<>(ids.size() * 2);
		long idBytes = 0;
		for (int i = 0; i < ids.size(); i++) {
			String id = ids.get(i);
			String field = "ids[" + i + "]";
			if (id == null || id.isEmpty()) {
				throw ServiceProblem.invalid(field, field + " is empty");
			}
			if (id.length() > this.limits.maxIdLength()) {
				throw ServiceProblem.invalid(field, field + " is longer than " + this.limits.maxIdLength()
						+ " characters (sample.limits.max-id-length)");
			}
			int utf8 = 0;
			for (int c = 0; c < id.length(); c++) {
				char ch = id.charAt(c);
				if (Character.isISOControl(ch) || ch == ',') {
					throw ServiceProblem.invalid(field, field + " contains a comma or control character");
				}
				// UTF-8 length: a surrogate counts 2 (a pair is 4 bytes, a lone one is replaced by '?').
				utf8 += (ch < 0x80) ? 1 : (ch < 0x800 || Character.isSurrogate(ch)) ? 2 : 3;
			}
			if (utf8 > WriteAheadLog.MAX_ID_BYTES) {
				throw ServiceProblem.invalid(field, field + " is " + utf8 + " bytes long in UTF-8, more than the "
						+ WriteAheadLog.MAX_ID_BYTES + " an id may have");
			}
			idBytes += utf8;
			if (!seen.add(id)) {
				throw ServiceProblem.invalid(field, "id '" + id + "' occurs more than once in the request");
			}
		}
		long record = WriteAheadLog.payloadBytes(ids.size(), dimension, idBytes);
		if (record > WriteAheadLog.MAX_PAYLOAD) {
			throw ServiceProblem.invalid("ids", "A write of " + ids.size() + " vectors of dimension " + dimension
					+ " with these ids needs a log record of " + record + " bytes, more than the "
					+ WriteAheadLog.MAX_PAYLOAD + " one write may have; split it into smaller writes");
		}
	}

	/**
	 * A search's query vectors for collection {@code name}: whole rows of {@code dimension}, at least
	 * one and at most {@link CollectionStore.Limits#maxQueries()}, values valid for the metric.
	 * @return the number of queries
	 */
	int checkQueries(String name, int dimension, Metric metric, float[] queries) {
		if (queries.length % dimension != 0) {
			throw ServiceProblem.wrongDimension(name, "vectors", dimension, queries.length);
		}
		int queryCount = queries.length / dimension;
		if (queryCount < 1) {
			throw ServiceProblem.invalid("vectors", "At least one query vector is required");
		}
		if (queryCount > this.limits.maxQueries()) {
			throw ServiceProblem.invalid("vectors", queryCount + " queries exceed the limit of "
					+ this.limits.maxQueries() + " per request (sample.limits.max-queries)");
		}
		Vectors.check("vectors", queries, dimension, metric);
		return queryCount;
	}

	/**
	 * A search's {@code k} against the collection's size (read under its lock), and the hits it would
	 * return against {@link CollectionStore.Limits#maxResults()}.
	 */
	void checkResults(String name, int queryCount, int k, int size) {
		if (k < 1 || k > size) {
			throw ServiceProblem.kOutOfRange(name, k, size);
		}
		if ((long) queryCount * k > this.limits.maxResults()) {
			throw ServiceProblem.tooManyResults(queryCount, k, this.limits.maxResults());
		}
	}

}
