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

/** A 3x3 box blur of a width x height image of floats (row-major), edges clamped. */
public final class Blur {

	/** Threads per block in x and in y; the CUDA body's tile is as wide. */
	public static final int TILE = 16;

	public static final KernelSource BLUR = KernelSource.named("blur3x3")
		.params(INT, INT, BUFFER, BUFFER)
		.cuda("""
			#define TILE 16
			extern "C" __global__ void blur3x3(int width, int height, const float* in, float* out) {
			  __shared__ float tile[TILE + 2][TILE + 2];   // the block's pixels and a 1-pixel halo
			  int x0 = blockIdx.x * TILE, y0 = blockIdx.y * TILE;
			  for (int ty = threadIdx.y; ty < TILE + 2; ty += TILE) {
			    for (int tx = threadIdx.x; tx < TILE + 2; tx += TILE) {
			      int gx = min(max(x0 + tx - 1, 0), width - 1);
			      int gy = min(max(y0 + ty - 1, 0), height - 1);
			      tile[ty][tx] = in[gy * width + gx];
			    }
			  }
			  __syncthreads();                             // every thread reaches it: no early return above
			  int x = x0 + threadIdx.x, y = y0 + threadIdx.y;
			  if (x < width && y < height) {
			    float sum = 0.0f;
			    for (int dy = 0; dy < 3; dy++)
			      for (int dx = 0; dx < 3; dx++)
			        sum += tile[threadIdx.y + dy][threadIdx.x + dx];
			    out[y * width + x] = sum / 9.0f;
			  }
			}""")
		.cpu((block, args) -> {
			// One call per block stands for its TILE x TILE threads; shared memory is only the GPU's
			// way to read each pixel once, so the CPU body reads the image directly. The sum runs in
			// the CUDA body's order (dy, then dx), so both give the same bits.
			int width = args.i32(0);
			int height = args.i32(1);
			FloatBuffer in = args.floats(2);
			FloatBuffer out = args.floats(3);
			int x0 = block.x() * block.blockDim().x();
			int y0 = block.y() * block.blockDim().y();
			for (int y = y0; y < Math.min(y0 + block.blockDim().y(), height); y++) {
				for (int x = x0; x < Math.min(x0 + block.blockDim().x(), width); x++) {
					float sum = 0.0f;
					for (int dy = -1; dy <= 1; dy++) {
						for (int dx = -1; dx <= 1; dx++) {
							sum += in.get(clamp(y + dy, height) * width + clamp(x + dx, width));
						}
					}
					out.put(y * width + x, sum / 9.0f);
				}
			}
		});

	private Blur() {
	}

	private static int clamp(int value, int size) {
		return Math.min(Math.max(value, 0), size - 1);
	}

	/** The launch for an image: 16x16 blocks covering it; an empty launch for an empty image. */
	public static LaunchConfig launchFor(int width, int height) {
		return LaunchConfig.covering(width, height, Dim3.of(TILE, TILE));
	}

	/** Blurs {@code image} on the calling thread's current stream and returns the result. */
	public static float[] blur(GpuLauncher launcher, float[] image, int width, int height) {
		float[] result = new float[image.length];
		try (DeviceBuffer in = launcher.upload(HostArray.of(image));
				DeviceBuffer out = launcher.allocate(image.length, ElementType.FLOAT)) {
			launcher.launch(BLUR, launchFor(width, height), width, height, in, out);
			out.download(HostArray.of(result)).join();
		}
		return result;
	}

}
