// knn_topk: one pass of the per-query top-k selection, a block per (chunk, query).
//
// Each block loads a chunk of KNN_CHUNK candidates of its query's row into shared memory (a short
// last chunk padded with (-inf, INT_MAX) to a power of two), sorts it best-first with a bitonic
// network and writes its first `keep = min(k, KNN_CHUNK)` entries (padding past the chunk's own):
//
//   out[(q * gridDim.x + chunk) * keep + r],  r < keep
//
// "Best" means the higher score, and on equal scores the lower slot id, so the order is total and
// identical on every backend. The first pass reads raw scores (useIds = 0: a candidate's id is its
// position in the row plus idBase, the first slot of the slab of the collection that was scored;
// inIds is not read); later passes read the (score, id) pairs an earlier pass wrote. The host
// repeats passes, each shrinking a row from m to ceil(m / KNN_CHUNK) * keep candidates, until one
// chunk is left, whose output is the sorted top k of the slab. It uses this kernel for
// k <= KNN_CHUNK / 2 (knn_sort_init + knn_bitonic_step sort whole rows beyond that).
//
// Launch: grid (ceil(m / KNN_CHUNK), queries), any block size (the service uses 512). The Java
// implementation for the CPU backend (KnnTwins.topk) selects the same entries with a bounded heap:
// the order is total, so the first `keep` of the sorted chunk are the same on both backends.

#define KNN_CHUNK 2048
#define KNN_NO_ID 0x7fffffff

__device__ __forceinline__ bool knn_better(float scoreA, int idA, float scoreB, int idB)
{
	return scoreA > scoreB || (scoreA == scoreB && idA < idB);
}

extern "C" __global__ void knn_topk(int m, int k, int useIds, int idBase, const float* __restrict__ inScores,
		const int* __restrict__ inIds, float* __restrict__ outScores, int* __restrict__ outIds)
{
	__shared__ float score[KNN_CHUNK];
	__shared__ int id[KNN_CHUNK];
	const int chunk = blockIdx.x;
	const long long q = blockIdx.y;
	const int keep = min(k, KNN_CHUNK);
	const long long row = q * m;
	const int base = chunk * KNN_CHUNK;
	// Only the chunk's candidates rounded up to a power of two are sorted: a short last chunk (the
	// usual case of a merge pass, whose rows hold a few lists of k) costs its own size, not 2048's.
	const int real = min(KNN_CHUNK, m - base);
	int width = 1;
	while (width < real) {
		width <<= 1;
	}
	for (int i = threadIdx.x; i < width; i += blockDim.x) {
		const int g = base + i;
		if (i < real) {
			score[i] = inScores[row + g];
			id[i] = useIds ? inIds[row + g] : idBase + g;
		}
		else {
			score[i] = __int_as_float(0xff800000); // -inf
			id[i] = KNN_NO_ID;
		}
	}
	__syncthreads();
	for (int size = 2; size <= width; size <<= 1) {
		for (int stride = size >> 1; stride > 0; stride >>= 1) {
			for (int t = threadIdx.x; t < width / 2; t += blockDim.x) {
				// i has the stride bit clear; j is its partner.
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
			__syncthreads();
		}
	}
	const long long out = (q * gridDim.x + chunk) * keep;
	for (int r = threadIdx.x; r < keep; r += blockDim.x) {
		const bool sorted = r < width;
		outScores[out + r] = sorted ? score[r] : __int_as_float(0xff800000);
		outIds[out + r] = sorted ? id[r] : KNN_NO_ID;
	}
}
