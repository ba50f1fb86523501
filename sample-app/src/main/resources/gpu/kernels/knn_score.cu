// knn_score: scores a tile of queries against a slab of stored vectors, as a tiled matrix product.
//
//   scores[q * m + i] = score(queries[q], vectors[first + i])   for q < count, i < m
//
// Cosine collections store unit vectors and the service normalises each query, so the dot product
// is the cosine similarity; dot collections store the vectors as given.
//
// The score of a pair is defined operation by operation, so that the CPU backend's twin
// (KnnTwins.score, with the Vector API or plain Java) gives the same bits:
//   - the dimensions are padded with zeros to a multiple of KNN_LANES (16);
//   - logical lane l accumulates acc = fmaf(query[j], vector[j], acc) over j = l (mod 16) in
//     increasing order, starting from +0;
//   - the 16 lanes are added by the tree p[l] += p[l + off], off = 8, 4, 2, 1 (__shfl_down_sync with
//     width 16, read at lane 0);
//   - a NaN result (inf - inf on overflow) becomes -inf, so that the ranking is a total order.
//
// Launch: grid (ceil(count / KNN_TILE_Q), ceil(m / KNN_TILE_V)), block 256 threads (KNN_THREADS).
// A block scores KNN_TILE_Q queries x KNN_TILE_V vectors: it stages KNN_DK dimensions of both tiles
// in shared memory at a time (zero padded), and each group of 16 consecutive threads (one logical
// lane each) accumulates 4 queries x 16 vectors in registers, reading shared memory without bank
// conflicts (row stride KNN_DK + 1; the two groups of a warp share their queries, a broadcast).

#define KNN_LANES 16
#define KNN_TILE_Q 16
#define KNN_TILE_V 64
#define KNN_DK 64
#define KNN_THREADS 256
#define KNN_GROUP_Q 4
#define KNN_GROUP_V 16

extern "C" __global__ void knn_score(int m, int dim, int count, long long first,
		const float* __restrict__ vectors, const float* __restrict__ queries, float* __restrict__ scores)
{
	__shared__ float sq[KNN_TILE_Q][KNN_DK + 1];
	__shared__ float sv[KNN_TILE_V][KNN_DK + 1];
	const int tid = threadIdx.x;
	const int lane = tid % KNN_LANES;
	const int group = tid / KNN_LANES;
	// 16 groups: 4 query sets x 4 vector sets; a warp's two groups have the same query set.
	const int qs = (group / 4) * KNN_GROUP_Q;
	const int vs = (group % 4) * KNN_GROUP_V;
	const int q0 = blockIdx.x * KNN_TILE_Q;
	const long long v0 = (long long) blockIdx.y * KNN_TILE_V;
	const int padded = (dim + KNN_LANES - 1) / KNN_LANES * KNN_LANES;

	float acc[KNN_GROUP_Q][KNN_GROUP_V];
#pragma unroll
	for (int a = 0; a < KNN_GROUP_Q; a++) {
#pragma unroll
		for (int b = 0; b < KNN_GROUP_V; b++) {
			acc[a][b] = 0.0f;
		}
	}
	for (int d0 = 0; d0 < padded; d0 += KNN_DK) {
		for (int e = tid; e < KNN_TILE_Q * KNN_DK; e += KNN_THREADS) {
			const int r = e / KNN_DK;
			const int c = e % KNN_DK;
			const int q = q0 + r;
			const int j = d0 + c;
			sq[r][c] = (q < count && j < dim) ? queries[(long long) q * dim + j] : 0.0f;
		}
		for (int e = tid; e < KNN_TILE_V * KNN_DK; e += KNN_THREADS) {
			const int r = e / KNN_DK;
			const int c = e % KNN_DK;
			const long long v = v0 + r;
			const int j = d0 + c;
			sv[r][c] = (v < m && j < dim) ? vectors[(first + v) * dim + j] : 0.0f;
		}
		__syncthreads();
		// d0 is a multiple of 16, so column c holds dimension d0 + c = lane (mod 16): this lane's.
		const int steps = min(KNN_DK, padded - d0);
		for (int c = lane; c < steps; c += KNN_LANES) {
			float x[KNN_GROUP_Q];
			float y[KNN_GROUP_V];
#pragma unroll
			for (int a = 0; a < KNN_GROUP_Q; a++) {
				x[a] = sq[qs + a][c];
			}
#pragma unroll
			for (int b = 0; b < KNN_GROUP_V; b++) {
				y[b] = sv[vs + b][c];
			}
#pragma unroll
			for (int a = 0; a < KNN_GROUP_Q; a++) {
#pragma unroll
				for (int b = 0; b < KNN_GROUP_V; b++) {
					acc[a][b] = fmaf(x[a], y[b], acc[a][b]);
				}
			}
		}
		__syncthreads();
	}
	// Every thread of the block is still here (no early return), so the full-mask shuffles see all
	// 32 lanes of each warp.
#pragma unroll
	for (int a = 0; a < KNN_GROUP_Q; a++) {
#pragma unroll
		for (int b = 0; b < KNN_GROUP_V; b++) {
			float s = acc[a][b];
#pragma unroll
			for (int offset = KNN_LANES / 2; offset > 0; offset >>= 1) {
				s += __shfl_down_sync(0xffffffffu, s, offset, KNN_LANES);
			}
			const int q = q0 + qs + a;
			const long long v = v0 + vs + b;
			if (lane == 0 && q < count && v < m) {
				scores[(long long) q * m + v] = isnan(s) ? __int_as_float(0xff800000) : s;
			}
		}
	}
}
