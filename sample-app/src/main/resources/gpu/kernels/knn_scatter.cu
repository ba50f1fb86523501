// knn_scatter: writes a batch of rows into a collection's device storage at their slots (new
// vectors are appended, replaced ones overwritten in place).
//
//   vectors[slots[r] * dim + j] = rows[r * dim + j]   for r < count, j < dim
//
// Launch: linear over count * dim elements, block 256; one thread per element, so both the reads
// and the writes of a row are coalesced. Java twin: KnnTwins.scatter.

extern "C" __global__ void knn_scatter(long long total, int dim, const int* __restrict__ slots,
		const float* __restrict__ rows, float* __restrict__ vectors)
{
	const long long e = (long long) blockIdx.x * blockDim.x + threadIdx.x;
	if (e >= total) {
		return;
	}
	const long long r = e / dim;
	const long long j = e - r * dim;
	vectors[(long long) slots[r] * dim + j] = rows[e];
}
