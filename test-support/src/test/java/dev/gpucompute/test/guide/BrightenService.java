package dev.gpucompute.test.guide;

import org.springframework.stereotype.Service;

import dev.gpucompute.DeviceBuffer;
import dev.gpucompute.ElementType;
import dev.gpucompute.GpuLauncher;
import dev.gpucompute.HostArray;
import dev.gpucompute.Kernel;
import dev.gpucompute.LaunchConfig;
import dev.gpucompute.StreamLease;
import dev.gpucompute.StreamPool;
import dev.gpucompute.StreamScope;

/** Uses the start-up kernel by name: nothing is loaded or compiled while requests run. */
@Service
public class BrightenService {

	private final GpuLauncher launcher;

	private final StreamPool pool;

	private final Kernel brighten;

	public BrightenService(GpuLauncher launcher, StreamPool pool) {
		this.launcher = launcher;
		this.pool = pool;
		this.brighten = launcher.kernel("brighten");   // loaded before the launcher bean existed
	}

	public float[] brighten(float[] pixels, float gain) {
		float[] result = new float[pixels.length];
		try (StreamLease lease = this.pool.acquire();
				StreamScope scope = this.launcher.useStream(lease.stream());
				DeviceBuffer in = this.launcher.upload(HostArray.of(pixels));
				DeviceBuffer out = this.launcher.allocate(pixels.length, ElementType.FLOAT)) {
			this.launcher.launch(this.brighten, LaunchConfig.linear(pixels.length, 256), pixels.length, gain, in, out);
			out.download(HostArray.of(result)).join();
		}
		return result;
	}

}
