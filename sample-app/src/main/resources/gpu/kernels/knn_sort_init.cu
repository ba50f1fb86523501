// knn_sort_init: prepares whole-row sorting for large k (k > 1024, beyond what knn_topk's chunks
// can keep). Copies each query's n scores into a row of p >= n entries (p a power of two), pairs
// every score with its slot id and pads the rest with (-inf, INT_MAX), which sort last.
//
//   s[q * p + i], ids[q * p + i] = (scores[q * n + i], idBase + i)   for i < n
//
// (idBase: the first slot of the slab of the collection the scores belong to.)
//
// Launch: grid (ceil(p / block), queries), block 256. Java twin: KnnTwins.sortInit.

#define KNN_NO_ID 0x7fffffff

extern "C" __global__ void knn_sort_init(int n, int p, int idBase, const float* __restrict__ scores,
		float* __restrict__ s, int* __restrict__ ids)
{
	const long long i = (long long) blockIdx.x * blockDim.x + threadIdx.x;
	const long long q = blockIdx.y;
	if (i >= p) {
		return;
	}
	const long long o = q * p + i;
	if (i < n) {
		s[o] = scores[q * n + i];
		ids[o] = idBase + (int) i;
	}
	else {
		s[o] = __int_as_float(0xff800000); // -inf
		ids[o] = KNN_NO_ID;
	}
}
