// knn_score: scores every stored vector against a group of queries.
//
//   scores[q * n + v] = dot(query[q], vectors[v])
//
// Cosine collections store unit vectors and the service normalises each query, so the dot product
// is the cosine similarity; dot collections store the vectors as given.
//
// Launch: grid (ceil(n / warpsPerBlock), queries), block a multiple of 32 threads (the service uses
// 256). One warp scores one (vector, query) pair: its lanes stride over the dimensions, so a warp
// reads a row with coalesced loads, accumulates with fmaf, and a shuffle tree adds the 32 partial
// sums. The Java implementation for the CPU backend (KnnKernels.score) performs exactly these
// operations in this order, so both backends produce the same bits and therefore the same ranking.

#define KNN_WARP 32

extern "C" __global__ void knn_score(int n, int dim, const float* __restrict__ vectors,
		const float* __restrict__ queries, float* __restrict__ scores)
{
	const int warpsPerBlock = blockDim.x / KNN_WARP;
	const int lane = threadIdx.x % KNN_WARP;
	const long long v = (long long) blockIdx.x * warpsPerBlock + threadIdx.x / KNN_WARP;
	const long long q = blockIdx.y;
	// v is the same for all lanes of a warp, so whole warps leave together and the full-mask
	// shuffles below always see 32 active lanes.
	if (v >= n) {
		return;
	}
	const float* row = vectors + v * dim;
	const float* query = queries + q * dim;
	float acc = 0.0f;
	for (int j = lane; j < dim; j += KNN_WARP) {
		acc = fmaf(query[j], row[j], acc);
	}
	for (int offset = KNN_WARP / 2; offset > 0; offset >>= 1) {
		acc += __shfl_down_sync(0xffffffffu, acc, offset);
	}
	if (lane == 0) {
		scores[q * n + v] = acc;
	}
}
