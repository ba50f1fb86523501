package dev.gpucompute.test.guide;

import dev.gpucompute.DeviceBuffer;
import dev.gpucompute.ElementType;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuLauncher;
import dev.gpucompute.HostArray;
import dev.gpucompute.HostBuffer;
import dev.gpucompute.Kernel;
import dev.gpucompute.LaunchConfig;
import dev.gpucompute.StreamLease;
import dev.gpucompute.graph.GpuGraph;
import dev.gpucompute.graph.GpuGraphs;

/**
 * Blurs images of one size {@code passes} times over: the upload, the passes (two blurs each, back
 * and forth between two buffers) and the download are captured once as a graph, and each image is
 * then one replay. One image at a time: the graph reads and writes the same buffers at every replay.
 */
public final class IterativeBlur implements AutoCloseable {

	private final GpuContext context;

	private final HostBuffer input;

	private final HostBuffer output;

	private final DeviceBuffer a;

	private final DeviceBuffer b;

	private final GpuGraph steps;

	private final int pixels;

	public IterativeBlur(GpuContext context, int width, int height, int passes) {
		this.context = context;
		this.pixels = width * height;
		GpuLauncher launcher = context.launcher();
		LaunchConfig config = Blur.launchFor(width, height);
		// Everything the graph uses is loaded or allocated before the capture and kept until close.
		Kernel blur = launcher.load(Blur.BLUR);
		this.input = context.launcher().allocateHost(4L * this.pixels);
		this.output = context.launcher().allocateHost(4L * this.pixels);
		this.a = launcher.allocate(this.pixels, ElementType.FLOAT);
		this.b = launcher.allocate(this.pixels, ElementType.FLOAT);
		try (StreamLease lease = context.streams().acquire()) {
			this.steps = GpuGraphs.of(context).capture("iterative-blur", lease.stream(), () -> {
				this.a.upload(this.input);                   // from the host buffer: no staging
				for (int pass = 0; pass < passes; pass++) {
					launcher.launch(blur, config, width, height, this.a, this.b);
					launcher.launch(blur, config, width, height, this.b, this.a);
				}
				this.a.download(this.output);
			});
		}
	}

	/** Operations in the graph: the upload, two blurs per pass, the download. */
	public int operations() {
		return this.steps.nodeCount();
	}

	/** The image blurred {@code passes} times over, as many launches, one call. */
	public synchronized float[] blur(float[] image) {
		float[] result = new float[this.pixels];
		this.input.put(0, HostArray.of(image));
		try (StreamLease lease = this.context.streams().acquire()) {
			this.steps.replay(lease.stream()).join();
		}
		this.output.get(0, HostArray.of(result));
		return result;
	}

	@Override
	public void close() {
		this.steps.close();
		this.a.close();
		this.b.close();
		this.input.close();
		this.output.close();
	}

}
