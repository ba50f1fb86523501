package dev.gpucompute.test.guide;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;

import dev.gpucompute.DeviceBuffer;
import dev.gpucompute.ElementType;
import dev.gpucompute.GpuLauncher;
import dev.gpucompute.GpuStream;
import dev.gpucompute.HostArray;

/** Blurs several images at once: one branch of a stream-parallel group, and one pooled stream, each. */
public final class BatchBlur {

	private BatchBlur() {
	}

	public static List<float[]> blurAll(GpuLauncher launcher, List<float[]> images, int width, int height) {
		List<float[]> results = new ArrayList<>();
		List<CompletableFuture<Void>> downloads = new ArrayList<>();
		List<Consumer<GpuStream>> branches = new ArrayList<>();
		for (float[] image : images) {
			float[] result = new float[image.length];
			results.add(result);
			// A branch runs on this thread with its own stream current: its buffers are allocated, used
			// and freed there, so the branches' copies and kernels can overlap on the device.
			branches.add((stream) -> {
				try (DeviceBuffer in = launcher.upload(HostArray.of(image));
						DeviceBuffer out = launcher.allocate(image.length, ElementType.FLOAT)) {
					launcher.launch(Blur.BLUR, Blur.launchFor(width, height), width, height, in, out);
					downloads.add(out.download(HostArray.of(result)));
				}   // freed on the branch's stream after the download: no wait here
			});
		}
		launcher.parallel(branches);   // after the current stream's work; the current stream then waits for all
		CompletableFuture.allOf(downloads.toArray(new CompletableFuture<?>[0])).join();
		return results;
	}

}
