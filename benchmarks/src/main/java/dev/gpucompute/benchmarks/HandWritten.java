package dev.gpucompute.benchmarks;

import java.nio.FloatBuffer;

import dev.gpucompute.KernelSource;
import dev.gpucompute.ParamType;

/**
 * Hand-written twins of the expression kernels that {@link ExpressionKernelBenchmark} measures: the
 * same computation, written as a user would, in CUDA C and Java. The sum follows the expression
 * reduction's order (256 lanes left to right, a halving tree; chunks of 4,096, then the chunks'
 * results), so both kernels give the same bits and compare like for like.
 */
final class HandWritten {

	static final int LANES = 256;

	static final int CHUNK = 4096;

	static final KernelSource SAXPY = KernelSource.named("saxpy_hand")
		.params(ParamType.INT, ParamType.FLOAT, ParamType.BUFFER, ParamType.BUFFER)
		.cuda("""
			extern "C" __global__ void saxpy_hand(int n, float a, const float* __restrict__ x, float* __restrict__ y) {
			  int i = blockIdx.x * blockDim.x + threadIdx.x;
			  if (i < n) y[i] = a * x[i] + y[i];
			}""")
		.compileOptions("-fmad=false")
		.cpu((block, args) -> {
			int n = args.i32(0);
			float a = args.f32(1);
			FloatBuffer x = args.floats(2);
			FloatBuffer y = args.floats(3);
			for (int i = (int) block.firstIndex(), end = (int) block.endIndex(n); i < end; i++) {
				y.put(i, a * x.get(i) + y.get(i));
			}
		});

	/**
	 * {@code (int n, const float* x, float* partials, float* total, int phase)}: phase 1 writes one
	 * partial sum per chunk (one block per chunk), phase 2 sums the partials in one block.
	 */
	static final KernelSource SUM = KernelSource.named("sum_hand")
		.params(ParamType.INT, ParamType.BUFFER, ParamType.BUFFER, ParamType.BUFFER, ParamType.INT)
		.cuda("""
			#define LANES 256
			#define CHUNK 4096
			// The expression reduction's order, for blocks of exactly 256 threads: thread l is lane l.
			__device__ float block_sum(const float* v, int m) {
			  __shared__ float lane[LANES];
			  int l = threadIdx.x;
			  if (l < m) {
			    float a = v[l];
			    for (int k = l + LANES; k < m; k += LANES) a = a + v[k];
			    lane[l] = a;
			  }
			  __syncthreads();
			  int active = min(m, LANES);
			  for (int h = LANES / 2; h > 0; h >>= 1) {
			    if (l < h && l + h < active) lane[l] = lane[l] + lane[l + h];
			    __syncthreads();
			  }
			  float r = lane[0];
			  __syncthreads();
			  return r;
			}
			extern "C" __global__ void sum_hand(int n, const float* x, float* partials, float* total, int phase) {
			  int chunks = (n + CHUNK - 1) / CHUNK;
			  if (phase == 1) {
			    int c = blockIdx.x;
			    float s = block_sum(x + (long long) c * CHUNK, min(CHUNK, n - c * CHUNK));
			    if (threadIdx.x == 0) partials[c] = s;
			  } else {
			    float s = block_sum(partials, chunks);
			    if (threadIdx.x == 0) total[0] = s;
			  }
			}""")
		.compileOptions("-fmad=false")
		.cpu((block, args) -> {
			int n = args.i32(0);
			FloatBuffer x = args.floats(1);
			FloatBuffer partials = args.floats(2);
			FloatBuffer total = args.floats(3);
			float[] lane = new float[LANES];
			if (args.i32(4) == 1) {
				int c = block.x();
				int start = c * CHUNK;
				partials.put(c, blockSum(x, start, Math.min(CHUNK, n - start), lane));
			}
			else {
				total.put(0, blockSum(partials, 0, (n + CHUNK - 1) / CHUNK, lane));
			}
		});

	private HandWritten() {
	}

	/** The lanes left to right, element by element across the lanes, then the halving tree. */
	static float blockSum(FloatBuffer v, int start, int m, float[] lane) {
		int lanes = Math.min(m, LANES);
		for (int l = 0; l < lanes; l++) {
			lane[l] = v.get(start + l);
		}
		for (int k = LANES; k < m; k += LANES) {
			int span = Math.min(LANES, m - k);
			for (int l = 0; l < span; l++) {
				lane[l] = lane[l] + v.get(start + k + l);
			}
		}
		for (int h = LANES / 2; h > 0; h >>= 1) {
			for (int j = 0; j < h && j + h < lanes; j++) {
				lane[j] = lane[j] + lane[j + h];
			}
		}
		return lane[0];
	}

}
