package dev.gpucompute.sample.search;

import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.opentest4j.AssertionFailedError;

import static dev.gpucompute.sample.search.TopKAssertions.assertSameTopK;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * {@link TopKAssertions}: equal results of millions of entries pass in one linear pass (AssertJ's
 * {@code containsExactly} takes minutes there: the GPU search test did not finish), and the first
 * difference is named by query, list and rank with both ids and scores.
 */
class TopKAssertionsTests {

	/** {@code queries} lists of {@code k}: distinct ids, falling scores, some ties and padding at the end. */
	private static SearchRun.Result result(int queries, int k) {
		float[] scores = new float[queries * k];
		int[] slots = new int[queries * k];
		for (int q = 0; q < queries; q++) {
			for (int r = 0; r < k; r++) {
				int i = q * k + r;
				boolean padding = r >= k - 3;
				scores[i] = padding ? Float.NEGATIVE_INFINITY : 1f - (r / 2) / (float) k;
				slots[i] = padding ? KnnKernels.NO_ID : (q * 7919 + r * 31) % 5_000_000;
			}
		}
		return new SearchRun.Result(scores, slots);
	}

	private static SearchRun.Result copy(SearchRun.Result result) {
		return new SearchRun.Result(result.scores().clone(), result.slots().clone());
	}

	@Test
	// A separate thread, so that a comparison stuck in a loop fails at the timeout instead of running on.
	@Timeout(value = 60, unit = TimeUnit.SECONDS, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
	void equalResultsOfTwoMillionEntriesPass() {
		// 500 queries at k = 4,096: 2,048,000 entries, more than any search test compares.
		SearchRun.Result expected = result(500, 4096);
		assertSameTopK("2 million entries", expected, copy(expected), 4096);
		SearchRun.Result different = copy(expected);
		different.slots()[different.slots().length - 5] ^= 1;
		assertThatThrownBy(() -> assertSameTopK("2 million entries", expected, different, 4096))
			.hasMessageContaining("query 499, rank 4091");
	}

	@Test
	void theFirstDifferenceIsNamedByQueryAndRankWithBothIdsAndScores() {
		SearchRun.Result expected = result(4, 10);
		SearchRun.Result actual = copy(expected);
		actual.slots()[2 * 10 + 6] = 12345;
		actual.scores()[3 * 10 + 1] = 0.25f;
		assertThatThrownBy(() -> assertSameTopK("whole search", expected, actual, 10))
			.isInstanceOf(AssertionFailedError.class)
			.hasMessage("whole search: query 2, rank 6: expected id " + expected.slots()[26] + " (score "
					+ expected.scores()[26] + ", bits 0x" + Integer.toHexString(Float.floatToRawIntBits(expected.scores()[26]))
					+ ") but was id 12345 (score " + expected.scores()[26] + ", bits 0x"
					+ Integer.toHexString(Float.floatToRawIntBits(expected.scores()[26])) + "); 2 of 40 entries differ");
	}

	@Test
	void scoresAreComparedByTheirBits() {
		SearchRun.Result expected = new SearchRun.Result(new float[] { 1f, 0f }, new int[] { 3, 4 });
		SearchRun.Result actual = new SearchRun.Result(new float[] { 1f, -0f }, new int[] { 3, 4 });
		assertThatThrownBy(() -> assertSameTopK("zeros", expected, actual, 2))
			.hasMessage("zeros: query 0, rank 1: expected id 4 (score 0.0, bits 0x0) but was id 4 (score -0.0, bits "
					+ "0x80000000); 1 of 2 entries differ");
		SearchRun.Result nan = new SearchRun.Result(new float[] { Float.NaN }, new int[] { 1 });
		assertSameTopK("the same NaN", nan, copy(nan), 1);
	}

	@Test
	void severalListsPerQueryAreNamedByList() {
		// A knn_fused launch: 3 queries x 4 ranges x k = 5, list l of query q at (q * 4 + l) * 5.
		SearchRun.Result expected = result(12, 5);
		SearchRun.Result actual = copy(expected);
		actual.slots()[(1 * 4 + 2) * 5 + 3] = -7;
		assertThatThrownBy(() -> assertSameTopK("ranges", expected, actual, 5, 4))
			.hasMessageStartingWith("ranges: query 1, list 2, rank 3: expected id ")
			.hasMessageContaining("but was id -7");
	}

	@Test
	void resultsOfDifferentLengthsDiffer() {
		assertThatThrownBy(() -> assertSameTopK("short", result(3, 10), result(2, 10), 10))
			.isInstanceOf(AssertionFailedError.class)
			.hasMessage("short: expected 30 entries but was 20");
	}

}
