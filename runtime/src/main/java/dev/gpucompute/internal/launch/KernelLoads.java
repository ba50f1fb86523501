package dev.gpucompute.internal.launch;

import java.time.Duration;
import java.util.concurrent.TimeUnit;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import dev.gpucompute.GpuLauncher;
import dev.gpucompute.KernelSource;
import dev.gpucompute.internal.core.ContextCompletions;
import dev.gpucompute.internal.core.ContextState;
import dev.gpucompute.internal.pool.Pool;
import dev.gpucompute.internal.stream.Streams;
import dev.gpucompute.listener.GpuListener;
import dev.gpucompute.listener.KernelLoad;
import dev.gpucompute.spi.DeviceBackend;
import dev.gpucompute.spi.HostThreads;
import dev.gpucompute.spi.NativeKernel;

/**
 * How a context loads a kernel through its backend and says so: whether work was in flight when
 * the load began, how long the load and the backend's own load step took, and the report
 * ({@link KernelLoad} to the listener; INFO for a load made by a launch, WARN for a load that waited
 * for work in flight). The rule is the same on every backend, so the CPU backend shows in CI what
 * CUDA does on a device. Thread-safe.
 */
final class KernelLoads {

	/** The launcher's logger: what users configure for what the launcher does. */
	private static final Logger log = LoggerFactory.getLogger(GpuLauncher.class);

	private static final String HOW_TO_LOAD_UP_FRONT = "load kernels before work starts: GpuContext.builder().kernels(...), "
			+ "GpuLauncher.load(...) at start-up, or with the Spring starter a KernelSource bean or a file under "
			+ "gpu.kernels.locations";

	private final ContextState lifecycle;

	private final Streams streams;

	private final Pool pool;

	private final ContextCompletions completions;

	private final DeviceBackend backend;

	private final GpuListener listener;

	private final long waitThresholdNanos;

	KernelLoads(ContextState lifecycle, DeviceBackend backend, GpuListener listener, Streams streams,
			Pool pool, ContextCompletions completions, Duration waitThreshold) {
		this.lifecycle = lifecycle;
		this.backend = backend;
		this.listener = listener;
		this.streams = streams;
		this.pool = pool;
		this.completions = completions;
		this.waitThresholdNanos = waitThreshold.toNanos();
	}


	/**
	 * Loads {@code source} through the backend and reports the load.
	 * @throws dev.gpucompute.KernelCompilationException when it does not load (not reported as a load)
	 */
	NativeKernel load(KernelSource source, KernelLoad.Trigger trigger) {
		boolean workInFlight = workInFlight();
		long started = System.nanoTime();
		NativeKernel handle = this.backend.loadKernel(source);
		long time = System.nanoTime() - started;
		long deviceTime = Math.max(0, handle.loadNanos());
		KernelLoad load = new KernelLoad(source.name(), trigger, Duration.ofNanos(time), Duration.ofNanos(deviceTime),
				workInFlight, workInFlight && deviceTime >= this.waitThresholdNanos);
		report(load);
		return handle;
	}

	/**
	 * Whether this context has work in flight that a load could wait for: a pooled stream (leased or
	 * not) that is not idle, the calling thread's current stream (or the shared legacy default
	 * stream) not idle, or a future of stream work (a copy, {@code completion()}) not complete. Work
	 * on other threads' per-thread default streams that nothing waits for is not seen.
	 */
	boolean workInFlight() {
		if (this.completions.pending() > 0 || this.pool.anyBusy()) {
			return true;
		}
		try {
			return !this.streams.currentQuietly().isIdle() || !this.streams.defaultStream().isIdle();
		}
		catch (RuntimeException ex) {
			return false; // a stream that cannot be queried (closed, failed) holds nothing a load waits for
		}
	}

	private void report(KernelLoad load) {
		if (load.waited()) {
			log.warn("Loading kernel '{}' {} held {} for {} ms: the {} backend's load step took {} ms and began "
					+ "while GPU context #{} had work in flight, which a CUDA module load waits for. To keep loads off "
					+ "busy devices, {} (docs/runtime.md, \"Loading kernels\")", load.kernel(), describe(load.trigger()),
					HostThreads.describe(Thread.currentThread()), millis(load.time()), this.lifecycle.device().backend(), millis(load.deviceTime()),
					this.lifecycle.id(), HOW_TO_LOAD_UP_FRONT);
		}
		else if (load.trigger() == KernelLoad.Trigger.LAUNCH) {
			log.info("Kernel '{}' was loaded by its first launch, launch(KernelSource, ...), on {} in {} ms. A load "
					+ "on a busy CUDA device waits for the work in flight there, so {}", load.kernel(),
					HostThreads.describe(Thread.currentThread()), millis(load.time()), HOW_TO_LOAD_UP_FRONT);
		}
		this.listener.kernelLoaded(load);
	}

	private static String describe(KernelLoad.Trigger trigger) {
		return switch (trigger) {
			case OPEN -> "while the context opened";
			case LOAD -> "with GpuLauncher.load";
			case LAUNCH -> "by its first launch, launch(KernelSource, ...),";
		};
	}

	private static String millis(Duration duration) {
		return String.format(java.util.Locale.ROOT, "%.1f", duration.toNanos() / (double) TimeUnit.MILLISECONDS.toNanos(1));
	}

}
