// knn_merge: each query's top k from `runs` sorted lists of k entries, in one pass, a block per query.
//
// Input, exactly what knn_fused writes (one list per range of rows):
//
//   inScores/inIds[(q * runs + r) * k + i],  i < k, best first,
//
// padded with (-inf, INT_MAX) behind a range's own rows. Output: outScores/outIds[q * k + i], the
// query's k best entries, best first, padded the same way. "Best" is the total order of every search
// kernel: the higher score, then the lower id. The entries are selected, never recomputed, so the
// output is bit for bit the top k that knn_topk's passes over the same candidates select, and what the
// CPU twin (KnnTwins.merge) writes. The inputs hold no NaN (knn_fused writes -inf for one).
//
// k rounds, each one barrier: thread t owns the runs t, t + blockDim.x, ... (KNN_MERGE_RUNS of them),
// keeping each run's head and the entry after it in registers; it offers the best of its heads; a
// butterfly of warp shuffles leaves each warp's best in all of its lanes; lane 0 of each warp puts it in
// shared memory, and after the barrier every thread reduces the warp winners itself, in the same order,
// so that all agree on the winner without a second barrier (the winners' slots alternate between two
// sets, so that round r + 1 writes none that a slow thread may still read in round r). Thread 0 writes
// the winner; the thread that owns its run moves that run's head on (the next entry is already in a
// register, and the one after it is loaded then, a round or more before it can be needed). Equal
// (score, id) pairs, which only padding has (the ranges' rows are distinct), are ordered by run, so the
// winner is unique and no thread order changes anything. Once the winner is padding, every head is
// (nothing ranks after padding), and the rest of the output is padding.
//
// Launch: grid (queries), block blockDim.x threads, a multiple of 32, at most KNN_MERGE_MAX_THREADS,
// with runs <= KNN_MERGE_RUNS * blockDim.x (the host takes the fewest warps that own every run), k >= 1.
// No dynamic shared memory. The host refuses any other launch before it is enqueued
// (KnnLaunchRules.checkMerge); should one come all the same, every block returns at once and writes
// nothing. It does not trap: a trap is a sticky error that loses the whole context, so every later
// search of the service would fail, where this launch's own request is the only one at fault.

#define KNN_NO_ID 0x7fffffff
#define KNN_MERGE_RUNS 4
#define KNN_MERGE_MAX_THREADS 256

// (scoreA, idA, runA) ranks before (scoreB, idB, runB).
__device__ __forceinline__ bool knn_merge_better(float scoreA, int idA, int runA, float scoreB, int idB, int runB)
{
	return scoreA > scoreB || (scoreA == scoreB && (idA < idB || (idA == idB && runA < runB)));
}

extern "C" __global__ void __launch_bounds__(KNN_MERGE_MAX_THREADS) knn_merge(int runs, int k,
		const float* __restrict__ inScores, const int* __restrict__ inIds, float* __restrict__ outScores,
		int* __restrict__ outIds)
{
	__shared__ float winnerScore[2][KNN_MERGE_MAX_THREADS / 32];
	__shared__ int winnerId[2][KNN_MERGE_MAX_THREADS / 32];
	__shared__ int winnerRun[2][KNN_MERGE_MAX_THREADS / 32];
	const int threads = blockDim.x;
	if (threads % 32 != 0 || threads > KNN_MERGE_MAX_THREADS || runs < 1 || runs > KNN_MERGE_RUNS * threads
			|| k < 1) {
		return; // a launch this kernel does not define: the same for the whole block, before any barrier
	}
	const float padScore = __int_as_float(0xff800000); // -inf
	const long long q = blockIdx.x;
	const float* scores = inScores + q * runs * k;
	const int* ids = inIds + q * runs * k;
	const int lane = threadIdx.x % 32;
	const int warp = threadIdx.x / 32;
	const int warps = threads / 32;

	// Run j of this thread is threadIdx.x + j * threads; a run past `runs` is padding throughout.
	float headScore[KNN_MERGE_RUNS];
	int headId[KNN_MERGE_RUNS];
	float nextScore[KNN_MERGE_RUNS];
	int nextId[KNN_MERGE_RUNS];
	int position[KNN_MERGE_RUNS]; // of the head within its list
#pragma unroll
	for (int j = 0; j < KNN_MERGE_RUNS; j++) {
		const int run = threadIdx.x + j * threads;
		const bool real = run < runs;
		headScore[j] = real ? scores[(long long) run * k] : padScore;
		headId[j] = real ? ids[(long long) run * k] : KNN_NO_ID;
		nextScore[j] = (real && k > 1) ? scores[(long long) run * k + 1] : padScore;
		nextId[j] = (real && k > 1) ? ids[(long long) run * k + 1] : KNN_NO_ID;
		position[j] = 0;
	}

	for (int r = 0; r < k; r++) {
		float bestScore = headScore[0];
		int bestId = headId[0];
		int bestRun = threadIdx.x;
#pragma unroll
		for (int j = 1; j < KNN_MERGE_RUNS; j++) {
			const int run = threadIdx.x + j * threads;
			if (knn_merge_better(headScore[j], headId[j], run, bestScore, bestId, bestRun)) {
				bestScore = headScore[j];
				bestId = headId[j];
				bestRun = run;
			}
		}
#pragma unroll
		for (int offset = 16; offset > 0; offset >>= 1) {
			const float otherScore = __shfl_xor_sync(0xffffffffu, bestScore, offset);
			const int otherId = __shfl_xor_sync(0xffffffffu, bestId, offset);
			const int otherRun = __shfl_xor_sync(0xffffffffu, bestRun, offset);
			if (knn_merge_better(otherScore, otherId, otherRun, bestScore, bestId, bestRun)) {
				bestScore = otherScore;
				bestId = otherId;
				bestRun = otherRun;
			}
		}
		const int set = r & 1;
		if (lane == 0) {
			winnerScore[set][warp] = bestScore;
			winnerId[set][warp] = bestId;
			winnerRun[set][warp] = bestRun;
		}
		__syncthreads();
		bestScore = winnerScore[set][0];
		bestId = winnerId[set][0];
		bestRun = winnerRun[set][0];
		for (int w = 1; w < warps; w++) {
			const float s = winnerScore[set][w];
			const int d = winnerId[set][w];
			const int u = winnerRun[set][w];
			if (knn_merge_better(s, d, u, bestScore, bestId, bestRun)) {
				bestScore = s;
				bestId = d;
				bestRun = u;
			}
		}
		if (bestId == KNN_NO_ID && bestScore == padScore) {
			// Uniform: every thread has the same winner. Every head is padding now.
			for (int i = r + threadIdx.x; i < k; i += threads) {
				outScores[q * k + i] = padScore;
				outIds[q * k + i] = KNN_NO_ID;
			}
			return;
		}
		if (threadIdx.x == 0) {
			outScores[q * k + r] = bestScore;
			outIds[q * k + r] = bestId;
		}
		// The winner's owner moves its run on. Selects over constant indices only: an `if (j == index)`
		// per run is turned back into an indexed access by the compiler, which puts the arrays in local memory.
		if (bestRun % threads == threadIdx.x) {
			int at = 0;
#pragma unroll
			for (int j = 0; j < KNN_MERGE_RUNS; j++) {
				at = (threadIdx.x + j * threads == bestRun) ? position[j] + 2 : at;
			}
			// The entry after the new head: loaded now, needed at the earliest when this run wins again.
			const bool more = at < k;
			const float loadedScore = more ? scores[(long long) bestRun * k + at] : padScore;
			const int loadedId = more ? ids[(long long) bestRun * k + at] : KNN_NO_ID;
#pragma unroll
			for (int j = 0; j < KNN_MERGE_RUNS; j++) {
				const bool advance = threadIdx.x + j * threads == bestRun;
				headScore[j] = advance ? nextScore[j] : headScore[j];
				headId[j] = advance ? nextId[j] : headId[j];
				nextScore[j] = advance ? loadedScore : nextScore[j];
				nextId[j] = advance ? loadedId : nextId[j];
				position[j] += advance ? 1 : 0;
			}
		}
	}
}
