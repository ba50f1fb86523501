package dev.gpucompute.sample.search;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Search results: {@code k} per query, query-major, best first, padded with (-inf,
 * {@link KnnKernels#NO_ID}); and the host's merge of several such lists into one by the kernels'
 * total order ({@link KnnKernels#better}: score desc, slot asc), which gives exactly the ranking a
 * single whole-collection search would.
 *
 * <p>The arrays belong to the record: callers do not change them.
 */
record TopK(float[] scores, int[] slots) {

	/**
	 * The overall top {@code k} per query of several shards' results, whose slots count from each
	 * shard's first slot; ranked by the kernels' total order (score, then collection slot), so
	 * the result is the one a single device would give.
	 * @param parts each shard's result: {@code queryCount * kOf(part)} entries, best first
	 * @param firstSlots the collection slot of each shard's row 0
	 */
	static TopK merge(List<TopK> parts, int[] firstSlots, int queryCount, int k) {
		List<Piece> pieces = new ArrayList<>(parts.size());
		for (int p = 0; p < parts.size(); p++) {
			TopK part = parts.get(p);
			int kp = part.scores.length / queryCount;
			float[] scores = new float[queryCount * k];
			int[] slots = new int[queryCount * k];
			Arrays.fill(scores, Float.NEGATIVE_INFINITY);
			Arrays.fill(slots, KnnKernels.NO_ID);
			for (int q = 0; q < queryCount; q++) {
				for (int r = 0; r < kp; r++) {
					scores[q * k + r] = part.scores[q * kp + r];
					slots[q * k + r] = part.slots[q * kp + r] + firstSlots[p];
				}
			}
			pieces.add(new Piece(0, queryCount, scores, slots));
		}
		return mergePieces(pieces, queryCount, k);
	}

	/**
	 * The top k of queries {@code [firstQuery, firstQuery + count)} within one shard or slab:
	 * {@code count * k} entries, best first per query, padded with {@code (-inf, NO_ID)}.
	 */
	record Piece(int firstQuery, int count, float[] scores, int[] slots) {
	}

	/**
	 * Merges the pieces' top k per query into the overall top k, by the kernels' total order
	 * (score desc, slot asc), so the result is the one a single whole-collection ranking would give.
	 */
	static TopK mergePieces(List<Piece> pieces, int queryCount, int k) {
		if (pieces.size() == 1 && pieces.get(0).count() == queryCount) {
			// One piece of every query (one group, one sub-batch, one slab: every small search) is the
			// answer: best first and padded like the merge's start, which each of its entries beats or equals.
			return new TopK(pieces.get(0).scores(), pieces.get(0).slots());
		}
		float[] scores = new float[queryCount * k];
		int[] slots = new int[queryCount * k];
		Arrays.fill(scores, Float.NEGATIVE_INFINITY);
		Arrays.fill(slots, KnnKernels.NO_ID);
		float[] mergedScores = new float[k];
		int[] mergedSlots = new int[k];
		for (Piece piece : pieces) {
			for (int q = 0; q < piece.count(); q++) {
				int at = (piece.firstQuery() + q) * k;
				int from = q * k;
				int a = 0;
				int b = 0;
				for (int r = 0; r < k; r++) {
					if (KnnKernels.better(piece.scores()[from + b], piece.slots()[from + b], scores[at + a], slots[at + a])) {
						mergedScores[r] = piece.scores()[from + b];
						mergedSlots[r] = piece.slots()[from + b++];
					}
					else {
						mergedScores[r] = scores[at + a];
						mergedSlots[r] = slots[at + a++];
					}
				}
				System.arraycopy(mergedScores, 0, scores, at, k);
				System.arraycopy(mergedSlots, 0, slots, at, k);
			}
		}
		return new TopK(scores, slots);
	}

}
