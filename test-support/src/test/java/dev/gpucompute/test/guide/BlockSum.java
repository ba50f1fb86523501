package dev.gpucompute.test.guide;

import static dev.gpucompute.ParamType.BUFFER;
import static dev.gpucompute.ParamType.INT;

import java.nio.FloatBuffer;

import dev.gpucompute.DeviceBuffer;
import dev.gpucompute.Dim3;
import dev.gpucompute.ElementType;
import dev.gpucompute.GpuLauncher;
import dev.gpucompute.HostArray;
import dev.gpucompute.KernelSource;
import dev.gpucompute.LaunchConfig;

/**
 * The sum of n floats in two passes: pass 1 reduces the input to one partial sum per block, pass 2
 * reduces the partial sums in one block. Both passes are the same kernel.
 */
public final class BlockSum {

	/** Threads per block: a power of two, for the tree. */
	public static final int THREADS = 256;

	/** Most blocks of pass 1; each thread first adds up a strided run of the input. */
	public static final int MAX_BLOCKS = 256;

	public static final KernelSource SUM = KernelSource.named("block_sum")
		.params(INT, BUFFER, BUFFER)
		.cuda("""
			extern "C" __global__ void block_sum(int n, const float* in, float* partial) {
			  extern __shared__ float sums[];              // blockDim.x floats, from LaunchConfig.withSharedMemory
			  int tid = threadIdx.x;
			  float acc = 0.0f;
			  for (int i = blockIdx.x * blockDim.x + tid; i < n; i += gridDim.x * blockDim.x)
			    acc += in[i];
			  sums[tid] = acc;
			  __syncthreads();
			  for (int s = blockDim.x / 2; s > 0; s >>= 1) {   // the tree: s = 128, 64, ..., 1
			    if (tid < s) sums[tid] += sums[tid + s];
			    __syncthreads();
			  }
			  if (tid == 0) partial[blockIdx.x] = sums[0];
			}""")
		.cpu((block, args) -> {
			// The block's threads one after the other, then the tree level by level: every float
			// addition of the CUDA body, in its order, so the result has the same bits.
			int n = args.i32(0);
			FloatBuffer in = args.floats(1);
			FloatBuffer partial = args.floats(2);
			FloatBuffer sums = block.sharedMemory().asFloatBuffer();
			int threads = block.blockDim().x();
			long stride = (long) block.gridDim().x() * threads;
			for (int tid = 0; tid < threads; tid++) {
				float acc = 0.0f;
				for (long i = block.firstIndex() + tid; i < n; i += stride) {
					acc += in.get((int) i);
				}
				sums.put(tid, acc);
			}
			for (int s = threads / 2; s > 0; s >>= 1) {
				for (int tid = 0; tid < s; tid++) {
					sums.put(tid, sums.get(tid) + sums.get(tid + s));
				}
			}
			partial.put(block.x(), sums.get(0));
		});

	private BlockSum() {
	}

	/** Blocks of pass 1 for n elements: 0 for none (an empty launch). */
	public static int blocks(int n) {
		return (int) Math.min(MAX_BLOCKS, (n + (long) THREADS - 1) / THREADS);
	}

	/**
	 * Enqueues the sum of {@code data[0..n)} into {@code total[0]} on the current stream;
	 * {@code partial} holds at least {@link #blocks(int)} floats.
	 */
	public static void enqueue(GpuLauncher launcher, DeviceBuffer data, int n, DeviceBuffer partial, DeviceBuffer total) {
		int blocks = blocks(n);
		launcher.launch(SUM, LaunchConfig.of(Dim3.of(blocks), Dim3.of(THREADS)).withSharedMemory(THREADS * Float.BYTES),
				n, data, partial);
		launcher.launch(SUM, LaunchConfig.of(Dim3.of(1), Dim3.of(THREADS)).withSharedMemory(THREADS * Float.BYTES),
				blocks, partial, total);
	}

	/** The sum of {@code data[0..n)}, computed on the current stream; 0 for n = 0. */
	public static float sum(GpuLauncher launcher, DeviceBuffer data, int n) {
		float[] result = new float[1];
		try (DeviceBuffer partial = launcher.allocate(blocks(n), ElementType.FLOAT);
				DeviceBuffer total = launcher.allocate(1, ElementType.FLOAT)) {
			enqueue(launcher, data, n, partial, total);
			total.download(HostArray.of(result)).join();
		}
		return result[0];
	}

}
