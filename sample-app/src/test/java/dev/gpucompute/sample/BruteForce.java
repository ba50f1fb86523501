package dev.gpucompute.sample;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Random;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The independent reference the kernels are checked against: every score computed in double
 * precision straight from the definition (cosine = q·v / (|q| |v|) on the raw vectors), a full sort,
 * the first k. Nothing is shared with the service's code path.
 */
public final class BruteForce {

	/** Scores closer than this count as tied: float32 kernels and this double reference may order them either way. */
	static final double TIE = 2e-5;

	private BruteForce() {
	}

	/** One expected hit. */
	public record Expected(String id, double score) {
	}

	/** Every vector ranked against the query, best first. */
	public static List<Expected> ranking(List<String> ids, float[][] vectors, float[] query, boolean cosine) {
		List<Expected> all = new ArrayList<>(ids.size());
		double queryNorm = norm(query);
		for (int i = 0; i < ids.size(); i++) {
			double dot = 0;
			for (int j = 0; j < query.length; j++) {
				dot += (double) query[j] * vectors[i][j];
			}
			double score = cosine ? dot / (queryNorm * norm(vectors[i])) : dot;
			all.add(new Expected(ids.get(i), score));
		}
		all.sort(Comparator.comparingDouble(Expected::score).reversed());
		return all;
	}

	static double norm(float[] v) {
		double s = 0;
		for (float x : v) {
			s += (double) x * x;
		}
		return Math.sqrt(s);
	}

	/**
	 * Asserts that the actual top k has the reference's ids in the reference's order, with scores
	 * within 1e-4. Where the reference's scores of neighbouring ranks are within {@link #TIE} (a run
	 * of near-ties, possibly reaching past rank k), any order and choice within the run is accepted.
	 */
	public static void assertSameResults(List<String> actualIds, float[] actualScores, List<Expected> ranking,
			int k, String what) {
		List<Expected> expected = ranking.subList(0, k);
		List<Expected> expectedPlusOne = ranking;
		assertThat(actualIds).as(what + ": result count").hasSize(k);
		for (int r = 0; r < k; r++) {
			// Plain comparisons first: AssertJ per rank is slow for k in the thousands.
			if (!(Math.abs(actualScores[r] - expected.get(r).score()) <= 1e-4)) {
				assertThat((double) actualScores[r]).as(what + ": score at rank " + r)
					.isCloseTo(expected.get(r).score(), org.assertj.core.data.Offset.offset(1e-4));
			}
		}
		int r = 0;
		while (r < k) {
			int end = r + 1;
			while (end < expectedPlusOne.size() && expectedPlusOne.get(end - 1).score() - expectedPlusOne.get(end).score() < TIE) {
				end++;
			}
			if (end == r + 1) {
				if (!actualIds.get(r).equals(expected.get(r).id())) {
					assertThat(actualIds.get(r)).as(what + ": id at rank " + r).isEqualTo(expected.get(r).id());
				}
			}
			else {
				// A run of near-ties: the actual ids in these ranks must come from the run.
				List<String> run = expectedPlusOne.subList(r, end).stream().map(Expected::id).toList();
				for (int i = r; i < Math.min(end, k); i++) {
					assertThat(run).as(what + ": id at rank " + i + " within a near-tie").contains(actualIds.get(i));
				}
			}
			r = end;
		}
		assertThat(new java.util.HashSet<>(actualIds)).as(what + ": ids unique").hasSize(k);
	}

	public static float[][] randomVectors(Random random, int count, int dimension) {
		float[][] vectors = new float[count][dimension];
		for (float[] v : vectors) {
			for (int j = 0; j < dimension; j++) {
				v[j] = (float) random.nextGaussian();
			}
		}
		return vectors;
	}

}
