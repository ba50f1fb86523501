// knn_fused: scores queries against a range of stored vectors and keeps each query's top k of that
// range, without writing the scores to memory. A block (x, y) takes the queries
// [x * groupQueries, min(count, (x + 1) * groupQueries)) and the rows
// [y * rowsPerBlock, min(n, (y + 1) * rowsPerBlock)) and writes, best first,
//
//   outScores/outIds[(q * gridDim.y + y) * k + r],  r < k
//
// (padded with (-inf, INT_MAX) when the range has fewer than k rows); knn_topk then merges the
// gridDim.y lists of each query into its top k. "Best" is the total order of every search kernel:
// the higher score, then the lower row. Scores are those of knn_score, bit for bit (see its header:
// 16 logical lanes over the zero-padded dimensions, fmaf in increasing order per lane from +0, the
// fixed +8/+4/+2/+1 tree, NaN -> -inf), so the same entries come out as from knn_score + knn_topk, and
// from the CPU twin (FusedTwin). The lane-to-thread mapping below is free because every lane's
// chain of fmas and the tree's additions are the defined ones (IEEE addition is commutative).
//
// Two ways to score, chosen by groupQueries (uniform over the launch; the CUDA kernel takes 1 to
// KNN_SCAN_MAX or KNN_BATCH_Q; the CPU twin takes any group size):
//   - scan (groupQueries <= KNN_SCAN_MAX): the memory-bound path for one or a few queries.
//     Each stored row is read once, by a group of 4 threads with coalesced 16-byte loads: thread c
//     reads dimensions 16i + 4c .. 16i + 4c + 3, which are logical lanes 4c .. 4c + 3, so it owns 4 of
//     the 16 lanes; two width-4 shuffles (+8, +4) and two additions in thread 0 finish the tree. The
//     queries sit in shared memory (broadcast to the 8 groups of a warp). 64 rows per block iteration.
//   - batch (groupQueries = KNN_BATCH_Q = 32): compute-bound, fp32 fma only. A block keeps its 32
//     queries in shared memory for its whole range and stages 32 stored
//     rows x 128 dimensions at a time. Thread c of a group of 4 owns the lanes c, c + 4, c + 8, c + 12
//     (dimensions = c mod 4) of 4 queries x 4 rows (64 accumulators, register blocked), reading them
//     as float4 from a layout that stores each 16-dimension block as [lanes 0,4,8,12 | 1,5,9,13 | ...].
//     The tree's +8 and +4 levels are then inside each thread, and +2/+1 cross threads as a butterfly
//     (12 shuffles per thread for 16 pairs), after which thread c holds query 4s + c x 4 rows.
//
// Selection, the same on both paths: per query, shared memory holds a sorted "kept" region of
// KP = pow2(k) entries, a buffer behind it and a threshold (the k-th best kept entry). A score that
// ranks before the threshold is appended to the buffer (shared atomic); one block barrier per
// iteration (__syncthreads_or) decides whether any buffer may overflow in the next two iterations, and
// then a warp per such query sorts kept + buffer (bitonic, best first), which keeps the best KP and
// raises the threshold. Dropping a score that does not beat the k-th best kept one is exact: that
// entry only improves. Ties are broken by the row, so the result does not depend on thread timing.
//
// Launch: grid (ceil(count / groupQueries), ranges), block KNN_THREADS, dynamic shared memory as
// KnnGeometry.fusedSharedBytes(dim, groupQueries, k) computes it (the layout below), 1 <= k <=
// KNN_FUSED_MAX_K. The host refuses any other launch before it is enqueued (KnnLaunchRules.checkFused);
// should one come all the same, each block this kernel does not define (an undefined group size, k
// or block, or a block past the last query) returns at once and writes nothing. It does not trap: a
// trap is a sticky error that loses the whole context, so every later search of the service would
// fail, where this launch's own request is the only one at fault.

#define KNN_LANES 16
#define KNN_NO_ID 0x7fffffff
#define KNN_THREADS 256
#define KNN_SCAN_MAX 8
#define KNN_BATCH_Q 32
#define KNN_SCAN_TILE 64
#define KNN_BATCH_TILE 32
#define KNN_BATCH_DK 128
#define KNN_FUSED_MAX_K 128

__device__ __forceinline__ bool knn_better(float scoreA, int idA, float scoreB, int idB)
{
	return scoreA > scoreB || (scoreA == scoreB && idA < idB);
}

__device__ __forceinline__ int knn_pow2(int x)
{
	int p = 1;
	while (p < x) {
		p <<= 1;
	}
	return p;
}

__device__ __forceinline__ float knn_finite_order(float s)
{
	return isnan(s) ? __int_as_float(0xff800000) : s;
}

// Per-query candidate lists in shared memory: `slots` entries per query, the first `kept` sorted.
struct KnnLists {
	float* score;
	int* id;
	int* count;
	float* thresholdScore;
	int* thresholdId;
	int slots;
	int kept;
	int k;
};

__device__ __forceinline__ void knn_offer(const KnnLists& lists, int q, float s, int id)
{
	if (knn_better(s, id, lists.thresholdScore[q], lists.thresholdId[q])) {
		const int at = atomicAdd(&lists.count[q], 1);
		lists.score[q * lists.slots + lists.kept + at] = s;
		lists.id[q * lists.slots + lists.kept + at] = id;
	}
}

// One warp: sorts query q's entries best first (the network of knn_topk), empties the buffer behind
// the kept region and sets the threshold to the k-th best.
__device__ void knn_sort_list(const KnnLists& lists, int q, int lane)
{
	float* score = lists.score + q * lists.slots;
	int* id = lists.id + q * lists.slots;
	const int slots = lists.slots;
	for (int size = 2; size <= slots; size <<= 1) {
		for (int stride = size >> 1; stride > 0; stride >>= 1) {
			for (int t = lane; t < slots / 2; t += 32) {
				const int i = 2 * t - (t & (stride - 1));
				const int j = i + stride;
				const bool bestFirst = (i & size) == 0;
				if (knn_better(score[j], id[j], score[i], id[i]) == bestFirst) {
					const float s = score[i];
					score[i] = score[j];
					score[j] = s;
					const int d = id[i];
					id[i] = id[j];
					id[j] = d;
				}
			}
			__syncwarp();
		}
	}
	for (int i = lists.kept + lane; i < slots; i += 32) {
		score[i] = __int_as_float(0xff800000);
		id[i] = KNN_NO_ID;
	}
	if (lane == 0) {
		lists.count[q] = 0;
		lists.thresholdScore[q] = score[lists.k - 1];
		lists.thresholdId[q] = id[lists.k - 1];
	}
	__syncwarp();
}

// Called by every thread once per iteration, after its offers: sorts the lists that might overflow
// within the next two iterations. The stale counts other threads read before the barrier are at most
// one iteration behind, hence the margin of two tiles (the buffer holds at least 2 * tile).
__device__ __forceinline__ void knn_settle(const KnnLists& lists, int queries, int tile)
{
	const int limit = lists.slots - lists.kept - 2 * tile;
	const int tid = threadIdx.x;
	const bool full = tid < queries && *((volatile int*) &lists.count[tid]) > limit;
	if (__syncthreads_or(full)) {
		for (int q = tid / 32; q < queries; q += KNN_THREADS / 32) {
			if (lists.count[q] > limit) {
				knn_sort_list(lists, q, tid % 32);
			}
		}
		__syncthreads();
	}
}

// Sorts every list a last time and writes the first k entries of the block's `here` queries (lists
// past them, padding for a smaller last group, belong to no query).
__device__ void knn_write_lists(const KnnLists& lists, int queries, int here, int firstQuery, float* outScores,
		int* outIds)
{
	__syncthreads();
	const int lane = threadIdx.x % 32;
	for (int q = threadIdx.x / 32; q < queries; q += KNN_THREADS / 32) {
		knn_sort_list(lists, q, lane);
		if (q < here) {
			const long long out = ((long long) (firstQuery + q) * gridDim.y + blockIdx.y) * lists.k;
			for (int r = lane; r < lists.k; r += 32) {
				outScores[out + r] = lists.score[q * lists.slots + r];
				outIds[out + r] = lists.id[q * lists.slots + r];
			}
		}
	}
}

__device__ KnnLists knn_lists(float* at, int queries, int k, int tile)
{
	KnnLists lists;
	lists.kept = knn_pow2(k);
	lists.slots = knn_pow2(lists.kept + 2 * tile);
	lists.k = k;
	lists.score = at;
	lists.id = (int*) (at + queries * lists.slots);
	lists.count = lists.id + queries * lists.slots;
	lists.thresholdScore = (float*) (lists.count + queries);
	lists.thresholdId = (int*) (lists.thresholdScore + queries);
	for (int i = threadIdx.x; i < queries * lists.slots; i += KNN_THREADS) {
		lists.score[i] = __int_as_float(0xff800000);
		lists.id[i] = KNN_NO_ID;
	}
	for (int q = threadIdx.x; q < queries; q += KNN_THREADS) {
		lists.count[q] = 0;
		lists.thresholdScore[q] = __int_as_float(0xff800000);
		lists.thresholdId[q] = KNN_NO_ID;
	}
	return lists;
}

// Dimensions j .. j + 3 of a stored row (zero past dim). ALIGNED: dim % 4 == 0, so that the row is
// 16-byte aligned and j < dim covers all four.
template <bool ALIGNED>
__device__ __forceinline__ float4 knn_load4(const float* __restrict__ row, int j, int dim)
{
	if (ALIGNED) {
		return (j < dim) ? __ldg((const float4*) (row + j)) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
	}
	float4 v;
	v.x = (j < dim) ? __ldg(row + j) : 0.0f;
	v.y = (j + 1 < dim) ? __ldg(row + j + 1) : 0.0f;
	v.z = (j + 2 < dim) ? __ldg(row + j + 2) : 0.0f;
	v.w = (j + 3 < dim) ? __ldg(row + j + 3) : 0.0f;
	return v;
}

__device__ __forceinline__ void knn_fma4(float* acc, float4 q, float4 v)
{
	acc[0] = fmaf(q.x, v.x, acc[0]);
	acc[1] = fmaf(q.y, v.y, acc[1]);
	acc[2] = fmaf(q.z, v.z, acc[2]);
	acc[3] = fmaf(q.w, v.w, acc[3]);
}

// ---- scan: one or a few queries, each row read once ------------------------------------------

// The block's `here` queries start at query firstQuery.
template <int NQ, bool ALIGNED>
__device__ void knn_scan(int n, int dim, int firstQuery, int here, int k, int rowsPerBlock,
		const float* __restrict__ vectors, const float* __restrict__ queries, float* outScores, int* outIds,
		float* smem)
{
	const int padded = (dim + KNN_LANES - 1) / KNN_LANES * KNN_LANES;
	const int blocks16 = padded / KNN_LANES;
	float* sq = smem; // NQ rows of `padded`, natural order, zero padded
	for (int e = threadIdx.x; e < NQ * padded; e += KNN_THREADS) {
		const int a = e / padded;
		const int j = e - a * padded;
		sq[e] = (a < here && j < dim) ? queries[(long long) (firstQuery + a) * dim + j] : 0.0f;
	}
	const KnnLists lists = knn_lists(sq + NQ * padded, NQ, k, KNN_SCAN_TILE);
	__syncthreads();
	const int c = threadIdx.x % 4;
	const int group = threadIdx.x / 4;
	const long long first = (long long) blockIdx.y * rowsPerBlock;
	const long long end = min((long long) n, first + rowsPerBlock);
	for (long long base = first; base < end; base += KNN_SCAN_TILE) {
		const long long r = base + group;
		const bool real = r < end;
		const float* row = vectors + (real ? r : first) * dim;
		float acc[NQ][4];
#pragma unroll
		for (int a = 0; a < NQ; a++) {
#pragma unroll
			for (int u = 0; u < 4; u++) {
				acc[a][u] = 0.0f;
			}
		}
		// Several rows' loads in flight per thread; fewer with 8 queries, whose operands fill the registers.
#pragma unroll(NQ >= 8 ? 2 : 4)
		for (int i = 0; i < blocks16; i++) {
			const int j = KNN_LANES * i + 4 * c;
			const float4 v = knn_load4<ALIGNED>(row, j, dim);
#pragma unroll
			for (int a = 0; a < NQ; a++) {
				knn_fma4(acc[a], *((const float4*) (sq + a * padded + j)), v);
			}
		}
		// Tree: +8 (thread c += thread c + 2), +4 (thread 0 += thread 1), then +2 and +1 in thread 0.
#pragma unroll
		for (int a = 0; a < NQ; a++) {
#pragma unroll
			for (int u = 0; u < 4; u++) {
				acc[a][u] += __shfl_down_sync(0xffffffffu, acc[a][u], 2, 4);
			}
#pragma unroll
			for (int u = 0; u < 4; u++) {
				acc[a][u] += __shfl_down_sync(0xffffffffu, acc[a][u], 1, 4);
			}
		}
		if (c == 0 && real) {
#pragma unroll
			for (int a = 0; a < NQ; a++) {
				if (a < here) {
					const float s = (acc[a][0] + acc[a][2]) + (acc[a][1] + acc[a][3]);
					knn_offer(lists, a, knn_finite_order(s), (int) r);
				}
			}
		}
		knn_settle(lists, NQ, KNN_SCAN_TILE);
	}
	knn_write_lists(lists, NQ, here, firstQuery, outScores, outIds);
}

// ---- batch: groups of 32 queries, register-blocked ---------------------------------------------

// The position of dimension j in the lane-major layout of its 16-dimension block: lanes c, c + 4,
// c + 8, c + 12 (the dimensions = c mod 4) are the float4 at 4c.
__device__ __forceinline__ int knn_lane_major(int j)
{
	const int w = j % KNN_LANES;
	return j - w + 4 * (w % 4) + w / 4;
}

template <bool ALIGNED>
__device__ void knn_batch(int n, int dim, int count, int k, int rowsPerBlock, const float* __restrict__ vectors,
		const float* __restrict__ queries, float* outScores, int* outIds, float* smem)
{
	const int padded = (dim + KNN_LANES - 1) / KNN_LANES * KNN_LANES;
	const int qStride = padded + 4; // +4: the two query sets of a warp land in different banks
	const int vStride = KNN_BATCH_DK + 4;
	float* sq = smem;
	float* sv = sq + KNN_BATCH_Q * qStride;
	const int firstQuery = blockIdx.x * KNN_BATCH_Q;
	for (int e = threadIdx.x; e < KNN_BATCH_Q * padded; e += KNN_THREADS) {
		const int a = e / padded;
		const int j = e - a * padded;
		const int q = firstQuery + a;
		sq[a * qStride + knn_lane_major(j)] = (q < count && j < dim) ? queries[(long long) q * dim + j] : 0.0f;
	}
	const KnnLists lists = knn_lists(sv + KNN_BATCH_TILE * vStride, KNN_BATCH_Q, k, KNN_BATCH_TILE);
	const int lane = threadIdx.x % 32;
	const int warp = threadIdx.x / 32;
	const int c = lane % 4;
	const int set = lane / 4;
	// 64 sets of 4 queries x 4 rows cover the 32 x 32 tile: 8 query sets x 8 row sets. A warp has 2
	// query sets x 4 row sets; warps 2w and 2w + 1 share their query sets and split the rows.
	const int qs = 2 * (warp / 2) + set / 4;
	const int vs = 4 * (warp % 2) + set % 4;
	// Staging: thread (stageBlock, stageRow) copies one 16-dimension block of one row.
	const int stageRow = threadIdx.x % KNN_BATCH_TILE;
	const int stageBlock = threadIdx.x / KNN_BATCH_TILE;
	const long long first = (long long) blockIdx.y * rowsPerBlock;
	const long long end = min((long long) n, first + rowsPerBlock);
	for (long long base = first; base < end; base += KNN_BATCH_TILE) {
		float acc[4][4][4];
#pragma unroll
		for (int a = 0; a < 4; a++) {
#pragma unroll
			for (int b = 0; b < 4; b++) {
#pragma unroll
				for (int u = 0; u < 4; u++) {
					acc[a][b][u] = 0.0f;
				}
			}
		}
		for (int d0 = 0; d0 < padded; d0 += KNN_BATCH_DK) {
			__syncthreads(); // the previous chunk is consumed (and, at the first, the query tile is written)
			const int j0 = d0 + KNN_LANES * stageBlock;
			if (j0 < padded) {
				const long long r = base + stageRow;
				float4 x[4];
				if (r < end) {
					const float* row = vectors + r * dim;
#pragma unroll
					for (int g = 0; g < 4; g++) {
						x[g] = knn_load4<ALIGNED>(row, j0 + 4 * g, dim);
					}
				}
				else {
#pragma unroll
					for (int g = 0; g < 4; g++) {
						x[g] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
					}
				}
				float4* to = (float4*) (sv + stageRow * vStride + KNN_LANES * stageBlock);
				to[0] = make_float4(x[0].x, x[1].x, x[2].x, x[3].x);
				to[1] = make_float4(x[0].y, x[1].y, x[2].y, x[3].y);
				to[2] = make_float4(x[0].z, x[1].z, x[2].z, x[3].z);
				to[3] = make_float4(x[0].w, x[1].w, x[2].w, x[3].w);
			}
			__syncthreads();
			const int chunk = min(KNN_BATCH_DK, padded - d0);
			for (int i = 0; i < chunk; i += KNN_LANES) {
				// The 4 query float4s stay in registers; the rows' are loaded one at a time (fewer live
				// registers: no spills at the 128 that two blocks per SM allow, on sm_75 to sm_100).
				float4 qv[4];
#pragma unroll
				for (int a = 0; a < 4; a++) {
					qv[a] = *((const float4*) (sq + (4 * qs + a) * qStride + d0 + i + 4 * c));
				}
#pragma unroll
				for (int b = 0; b < 4; b++) {
					const float4 vv = *((const float4*) (sv + (4 * vs + b) * vStride + i + 4 * c));
#pragma unroll
					for (int a = 0; a < 4; a++) {
						knn_fma4(acc[a][b], qv[a], vv);
					}
				}
			}
		}
		// Tree: +8 and +4 in the thread: lane c + 8u' pairs with c + 8 + ..., i.e. (u0 + u2) + (u1 + u3).
		float part[16];
#pragma unroll
		for (int a = 0; a < 4; a++) {
#pragma unroll
			for (int b = 0; b < 4; b++) {
				part[4 * a + b] = (acc[a][b][0] + acc[a][b][2]) + (acc[a][b][1] + acc[a][b][3]);
			}
		}
		// +2: threads c and c ^ 2; c < 2 keeps pairs 0..7 (queries 0, 1), c >= 2 pairs 8..15.
		const bool high2 = (c & 2) != 0;
		float half[8];
#pragma unroll
		for (int p = 0; p < 8; p++) {
			const float mine = high2 ? part[8 + p] : part[p];
			const float theirs = __shfl_xor_sync(0xffffffffu, high2 ? part[p] : part[8 + p], 2);
			half[p] = mine + theirs;
		}
		// +1: threads c and c ^ 1; even c keeps the first query of its half, odd c the second.
		const bool high1 = (c & 1) != 0;
		float score[4];
#pragma unroll
		for (int p = 0; p < 4; p++) {
			const float mine = high1 ? half[4 + p] : half[p];
			const float theirs = __shfl_xor_sync(0xffffffffu, high1 ? half[p] : half[4 + p], 1);
			score[p] = mine + theirs;
		}
		// Thread c now holds query 4 qs + c against rows 4 vs + b.
		const int a = 4 * qs + c;
		if (firstQuery + a < count) {
#pragma unroll
			for (int b = 0; b < 4; b++) {
				const long long r = base + 4 * vs + b;
				if (r < end) {
					knn_offer(lists, a, knn_finite_order(score[b]), (int) r);
				}
			}
		}
		knn_settle(lists, KNN_BATCH_Q, KNN_BATCH_TILE);
	}
	knn_write_lists(lists, KNN_BATCH_Q, min(KNN_BATCH_Q, count - firstQuery), firstQuery, outScores, outIds);
}

extern "C" __global__ void __launch_bounds__(KNN_THREADS, 2) knn_fused(int n, int dim, int count, int k,
		int rowsPerBlock, int groupQueries, const float* __restrict__ vectors, const float* __restrict__ queries,
		float* __restrict__ outScores, int* __restrict__ outIds)
{
	extern __shared__ float4 knn_shared[];
	float* smem = (float*) knn_shared;
	const bool aligned = (dim % 4) == 0;
	const int firstQuery = blockIdx.x * groupQueries;
	const int here = min(groupQueries, count - firstQuery);
	// The returns below leave a block this kernel does not define: each condition is the same for the
	// whole block and comes before any barrier. (One test of k and `here` for both paths spills 8 bytes
	// on sm_75; the batch path's block past the last query writes nothing by itself.)
	if (blockDim.x != KNN_THREADS || k < 1 || k > KNN_FUSED_MAX_K) {
		return;
	}
	if (groupQueries == KNN_BATCH_Q) {
		if (aligned) {
			knn_batch<true>(n, dim, count, k, rowsPerBlock, vectors, queries, outScores, outIds, smem);
		}
		else {
			knn_batch<false>(n, dim, count, k, rowsPerBlock, vectors, queries, outScores, outIds, smem);
		}
	}
	else if (groupQueries < 1 || groupQueries > KNN_SCAN_MAX || here < 1) {
		return;
	}
	else if (here > 4) {
		if (aligned) {
			knn_scan<8, true>(n, dim, firstQuery, here, k, rowsPerBlock, vectors, queries, outScores, outIds, smem);
		}
		else {
			knn_scan<8, false>(n, dim, firstQuery, here, k, rowsPerBlock, vectors, queries, outScores, outIds, smem);
		}
	}
	else if (here > 2) {
		if (aligned) {
			knn_scan<4, true>(n, dim, firstQuery, here, k, rowsPerBlock, vectors, queries, outScores, outIds, smem);
		}
		else {
			knn_scan<4, false>(n, dim, firstQuery, here, k, rowsPerBlock, vectors, queries, outScores, outIds, smem);
		}
	}
	else if (here > 1) {
		if (aligned) {
			knn_scan<2, true>(n, dim, firstQuery, here, k, rowsPerBlock, vectors, queries, outScores, outIds, smem);
		}
		else {
			knn_scan<2, false>(n, dim, firstQuery, here, k, rowsPerBlock, vectors, queries, outScores, outIds, smem);
		}
	}
	else if (aligned) {
		knn_scan<1, true>(n, dim, firstQuery, here, k, rowsPerBlock, vectors, queries, outScores, outIds, smem);
	}
	else {
		knn_scan<1, false>(n, dim, firstQuery, here, k, rowsPerBlock, vectors, queries, outScores, outIds, smem);
	}
}
