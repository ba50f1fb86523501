// knn_bitonic_step: one compare-exchange step of a bitonic sort over each query's row of p
// (score, id) pairs in global memory, best first (higher score, then lower id). The host launches
// it for size = 2, 4, ..., p and, within each size, stride = size / 2, ..., 1; afterwards every row
// is sorted and its first k entries are the query's top k. Used for k > 1024; knn_topk handles the
// usual small k with far less work.
//
// Launch: grid (ceil(p / 2 / block), queries), block 256: one thread per compared pair.
// Java twin: KnnTwins.bitonicStep.

__device__ __forceinline__ bool knn_better(float scoreA, int idA, float scoreB, int idB)
{
	return scoreA > scoreB || (scoreA == scoreB && idA < idB);
}

extern "C" __global__ void knn_bitonic_step(int p, int size, int stride, float* __restrict__ s,
		int* __restrict__ ids)
{
	const long long t = (long long) blockIdx.x * blockDim.x + threadIdx.x;
	const long long q = blockIdx.y;
	if (t >= p / 2) {
		return;
	}
	// i has the stride bit clear; j is its partner.
	const long long i = 2 * t - (t & (stride - 1));
	const long long j = i + stride;
	const bool bestFirst = (i & size) == 0;
	float* score = s + q * p;
	int* id = ids + q * p;
	if (knn_better(score[j], id[j], score[i], id[i]) == bestFirst) {
		const float tmp = score[i];
		score[i] = score[j];
		score[j] = tmp;
		const int d = id[i];
		id[i] = id[j];
		id[j] = d;
	}
}
