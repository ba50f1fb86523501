package dev.gpucompute.test.guide;

import static dev.gpucompute.ParamType.BUFFER;
import static dev.gpucompute.ParamType.FLOAT;
import static dev.gpucompute.ParamType.INT;

import java.nio.FloatBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

import dev.gpucompute.DeviceBuffer;
import dev.gpucompute.ElementType;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuEvent;
import dev.gpucompute.GpuLauncher;
import dev.gpucompute.GpuStream;
import dev.gpucompute.HostArray;
import dev.gpucompute.KernelSource;
import dev.gpucompute.LaunchConfig;
import dev.gpucompute.StreamPool.StreamLeases;
import dev.gpucompute.StreamScope;

/**
 * Frames through two streams: stream A blurs each frame and thresholds it into a mask; stream B
 * computes the mean of each blurred frame while A thresholds. Two events order the shared buffer
 * both ways, and the host waits only at the end.
 */
public final class ImagePipeline {

	public static final KernelSource THRESHOLD = KernelSource.named("threshold")
		.params(INT, FLOAT, BUFFER, BUFFER)
		.cuda("""
			extern "C" __global__ void threshold(int n, float level, const float* in, float* mask) {
			  int i = blockIdx.x * blockDim.x + threadIdx.x;
			  if (i < n) mask[i] = (in[i] > level) ? 1.0f : 0.0f;
			}""")
		.cpu((block, args) -> {
			int n = args.i32(0);
			float level = args.f32(1);
			FloatBuffer in = args.floats(2);
			FloatBuffer mask = args.floats(3);
			for (int i = (int) block.firstIndex(); i < block.endIndex(n); i++) {
				mask.put(i, (in.get(i) > level) ? 1.0f : 0.0f);
			}
		});

	/** One frame's results. */
	public record Result(float[] mask, float mean) {
	}

	private ImagePipeline() {
	}

	public static List<Result> process(GpuContext gpu, List<float[]> frames, int width, int height, float level) {
		GpuLauncher launcher = gpu.launcher();
		int n = width * height;
		List<float[]> masks = new ArrayList<>();
		List<float[]> sums = new ArrayList<>();
		List<CompletableFuture<Void>> copies = new ArrayList<>();
		try (StreamLeases leases = gpu.streams().acquireAll(2);
				GpuEvent blurred = gpu.events().create();     // on A: this frame's blur is written
				GpuEvent read = gpu.events().create()) {      // on B: the previous blur has been read
			GpuStream a = leases.stream(0);
			GpuStream b = leases.stream(1);
			try (StreamScope onA = launcher.useStream(a);   // buffers and calls without a stream: A
					DeviceBuffer in = launcher.allocate(n, ElementType.FLOAT);
					DeviceBuffer smooth = launcher.allocate(n, ElementType.FLOAT);
					DeviceBuffer mask = launcher.allocate(n, ElementType.FLOAT);
					DeviceBuffer partial = launcher.allocate(BlockSum.blocks(n), ElementType.FLOAT);
					DeviceBuffer total = launcher.allocate(1, ElementType.FLOAT)) {
				for (float[] frame : frames) {
					in.upload(HostArray.of(frame));
					a.waitFor(read);                          // never recorded yet: no wait for the first frame
					launcher.launch(Blur.BLUR, Blur.launchFor(width, height), width, height, in, smooth);
					a.record(blurred);
					launcher.launch(THRESHOLD, LaunchConfig.linear(n, 256), n, level, smooth, mask);
					float[] maskHost = new float[n];
					copies.add(mask.download(HostArray.of(maskHost)));
					masks.add(maskHost);

					b.waitFor(blurred);                       // the host does not block here
					float[] sum = new float[1];
					launcher.withStream(b, () -> {
						BlockSum.enqueue(launcher, smooth, n, partial, total);
						copies.add(total.download(HostArray.of(sum)));
					});
					b.record(read);
					sums.add(sum);
				}
				CompletableFuture.allOf(copies.toArray(new CompletableFuture<?>[0])).join();
			}
		}
		List<Result> results = new ArrayList<>();
		for (int i = 0; i < masks.size(); i++) {
			results.add(new Result(masks.get(i), sums.get(i)[0] / n));
		}
		return results;
	}

}
