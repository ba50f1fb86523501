package dev.gpucompute.autoconfigure;

import java.time.Duration;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;

import org.springframework.context.SmartLifecycle;

import dev.gpucompute.ContextClosedException;
import dev.gpucompute.DeviceInfo;
import dev.gpucompute.GpuContext;
import dev.gpucompute.Kernel;
import dev.gpucompute.MemoryInfo;
import dev.gpucompute.PoolStats;

/**
 * Drains the {@link GpuContext} when the application stops: the stream pool stops handing out
 * leases and the device finishes the work already enqueued, within
 * {@code gpu.shutdown.drain-timeout}. Native resources (streams, events, device memory, the device
 * context) are released later, when the context bean is destroyed, so beans that depend on the
 * context can still close their buffers in their own destroy callbacks. The drain logs one INFO line
 * (a WARN when it times out) with how long it took and what it dealt with: the stream leases held
 * and threads waiting when the pool stopped, the launches made while draining, and the device
 * buffers left for the context to free.
 *
 * <p>Spring stops lifecycle beans from the highest phase down and waits for each phase to finish.
 * {@link #PHASE} is below the web server's phases (graceful shutdown at
 * {@code Integer.MAX_VALUE - 1024}, which waits for in-flight requests; then the server stop at
 * {@code Integer.MAX_VALUE - 2048}), so HTTP requests that launch kernels complete, with their
 * leases, before the pool closes. A component that launches kernels from its own threads (a
 * message listener, a scheduler) should stop in a phase above {@link #PHASE}. The lifecycle is
 * not pauseable: {@code ConfigurableApplicationContext.pause()} leaves the GPU running, since the
 * pool cannot be reopened once drained.
 */
public final class GpuLifecycle implements SmartLifecycle {

	/**
	 * The phase of this lifecycle: below the web server's stop phases, so that it starts before
	 * the server accepts requests and stops after the server finished them.
	 */
	public static final int PHASE = Integer.MAX_VALUE - 4096;

	private static final Log logger = LogFactory.getLog(GpuLifecycle.class);

	private final GpuContext context;

	private final Duration drainTimeout;

	private volatile boolean running;

	/**
	 * @param context the context to drain at stop (owned by the caller, who closes it)
	 * @param drainTimeout longest wait for enqueued work at stop
	 */
	public GpuLifecycle(GpuContext context, Duration drainTimeout) {
		this.context = context;
		this.drainTimeout = drainTimeout;
	}

	@Override
	public void start() {
		this.running = !this.context.isClosed();
	}

	@Override
	public void stop() {
		if (!this.running) {
			return;
		}
		this.running = false;
		PoolStats before = this.context.streams().stats();
		long launchesBefore = launches();
		long start = System.nanoTime();
		boolean idle = this.context.drain(this.drainTimeout);
		long millis = Duration.ofNanos(System.nanoTime() - start).toMillis();
		String drained = describe(before, launchesBefore);
		DeviceInfo device = this.context.device();
		String what = "GPU work of " + device.backend() + " device " + device.ordinal() + " (" + device.name() + ")";
		if (idle) {
			logger.info("Drained " + what + " in " + millis + " ms: " + drained);
		}
		else {
			logger.warn(what + " did not finish within gpu.shutdown.drain-timeout (" + this.drainTimeout + ", waited "
					+ millis + " ms): " + drained + "; its resources will be released anyway");
		}
	}

	/** What the drain dealt with: the leases held and the launches that ran while it waited. */
	private String describe(PoolStats before, long launchesBefore) {
		long launchedDuringDrain = launches() - launchesBefore;
		StringBuilder text = new StringBuilder();
		text.append(before.active())
			.append((before.active() == 1) ? " stream lease was" : " stream leases were")
			.append(" held and ")
			.append(before.pending())
			.append((before.pending() == 1) ? " thread was" : " threads were")
			.append(" waiting for one when the pool stopped, ")
			.append(launchedDuringDrain)
			.append((launchedDuringDrain == 1) ? " kernel launch" : " kernel launches")
			.append(" while draining (")
			.append(launchesBefore + launchedDuringDrain)
			.append(" since start-up)");
		try {
			MemoryInfo memory = this.context.memory();
			text.append(", ")
				.append(memory.liveBuffers())
				.append((memory.liveBuffers() == 1) ? " device buffer" : " device buffers")
				.append(" (")
				.append(bytes(memory.usedBytes()))
				.append(") left for the context to free");
		}
		catch (ContextClosedException ex) {
			// closed meanwhile: nothing left to report about memory
		}
		return text.toString();
	}

	private long launches() {
		long launches = 0;
		for (Kernel kernel : this.context.launcher().kernels()) {
			launches += kernel.stats().launches();
		}
		return launches;
	}

	private static String bytes(long bytes) {
		if (bytes < 1024) {
			return bytes + " B";
		}
		String[] units = { "KiB", "MiB", "GiB", "TiB" };
		double value = bytes;
		int unit = -1;
		while (value >= 1024 && unit < units.length - 1) {
			value /= 1024;
			unit++;
		}
		return String.format(java.util.Locale.ROOT, "%.1f %s", value, units[unit]);
	}

	@Override
	public boolean isRunning() {
		return this.running;
	}

	@Override
	public int getPhase() {
		return PHASE;
	}

	@Override
	public boolean isPauseable() {
		return false;
	}

}
