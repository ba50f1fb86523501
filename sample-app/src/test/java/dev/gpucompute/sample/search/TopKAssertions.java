package dev.gpucompute.sample.search;

import java.util.Locale;

import org.opentest4j.AssertionFailedError;

/**
 * Equality of two search results ({@link SearchRun.Result}: top-k lists of ids and scores), entry by
 * entry, in one pass. AssertJ's {@code containsExactly} builds a diff of both arrays before it compares
 * anything, in time quadratic in their length even when they are equal (a whole search of 257 queries
 * at k = 4,096 has a million entries and did not finish on a GPU run); this is linear and names the
 * first entry that differs by query, list and rank, with both ids and both scores (value and bits).
 * Scores are compared by their raw bits, as the twins promise.
 */
final class TopKAssertions {

	private TopKAssertions() {
	}

	/**
	 * Fails unless {@code actual} holds the same entries as {@code expected}: one top-k list of
	 * {@code k} entries per query, query-major.
	 */
	static void assertSameTopK(String what, SearchRun.Result expected, SearchRun.Result actual, int k) {
		assertSameTopK(what, expected, actual, k, 1);
	}

	/**
	 * Fails unless {@code actual} holds the same entries as {@code expected}: {@code listsPerQuery}
	 * lists of {@code k} entries per query (a {@code knn_fused} launch's ranges, a {@code knn_topk}
	 * launch's chunks), list {@code l} of query {@code q} at {@code (q * listsPerQuery + l) * k}.
	 */
	static void assertSameTopK(String what, SearchRun.Result expected, SearchRun.Result actual, int k,
			int listsPerQuery) {
		if (k < 1 || listsPerQuery < 1) {
			throw new IllegalArgumentException("k and lists per query must be positive, got " + k + " and "
					+ listsPerQuery);
		}
		int length = expected.scores().length;
		if (expected.slots().length != length || actual.scores().length != actual.slots().length) {
			throw new IllegalArgumentException("A result holds as many scores as ids");
		}
		if (actual.scores().length != length) {
			throw new AssertionFailedError(what + ": expected " + length + " entries but was " + actual.scores().length);
		}
		if (length % k != 0) {
			throw new IllegalArgumentException(length + " entries are no whole number of lists of " + k);
		}
		int first = -1;
		int differing = 0;
		for (int i = 0; i < length; i++) {
			if (expected.slots()[i] != actual.slots()[i]
					|| Float.floatToRawIntBits(expected.scores()[i]) != Float.floatToRawIntBits(actual.scores()[i])) {
				if (first < 0) {
					first = i;
				}
				differing++;
			}
		}
		if (first < 0) {
			return;
		}
		int list = first / k;
		String where = "query " + (list / listsPerQuery)
				+ ((listsPerQuery > 1) ? ", list " + (list % listsPerQuery) : "") + ", rank " + (first % k);
		throw new AssertionFailedError(String.format(Locale.ROOT,
				"%s: %s: expected id %d (score %s) but was id %d (score %s); %d of %d entries differ", what, where,
				expected.slots()[first], score(expected.scores()[first]), actual.slots()[first],
				score(actual.scores()[first]), differing, length));
	}

	private static String score(float score) {
		return score + ", bits 0x" + Integer.toHexString(Float.floatToRawIntBits(score));
	}

}
