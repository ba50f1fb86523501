package dev.gpucompute.autoconfigure;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;

import org.springframework.context.SmartLifecycle;

import dev.gpucompute.ContextClosedException;
import dev.gpucompute.DeviceInfo;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuContext.MemoryInfo;
import dev.gpucompute.GpuDevices;
import dev.gpucompute.Kernel;
import dev.gpucompute.StreamPool.PoolStats;
import dev.gpucompute.batch.GpuBatcher;
import dev.gpucompute.spi.ByteSizes;

/**
 * Drains the {@link GpuContext} (or every context of a {@link GpuDevices}) when the application
 * stops: first every {@link GpuBatcher} of the contexts closes, its queued items running while the
 * pools still lease streams; then the stream pools stop handing out leases and the devices finish the work already enqueued,
 * within {@code gpu.shutdown.drain-timeout}. With several devices, every pool is stopped first and
 * then the devices are waited for, so that they drain in parallel within one timeout. Native resources (streams, events, device memory, the device
 * context) are released later, when the context bean is destroyed, so beans that depend on the
 * context can still close their buffers in their own destroy callbacks. The drain logs one INFO line
 * (a WARN when it times out) with how long it took and what it dealt with: the stream leases held
 * and threads waiting when the pool stopped, the launches made while draining, and the device
 * buffers left for the context to free; one such line per device.
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

	private final List<GpuContext> contexts;

	private final Duration drainTimeout;

	private volatile boolean running;

	/**
	 * @param context the context to drain at stop (owned by the caller, who closes it)
	 * @param drainTimeout longest wait for enqueued work at stop
	 */
	public GpuLifecycle(GpuContext context, Duration drainTimeout) {
		this(List.of(context), drainTimeout);
	}

	/**
	 * @param devices the devices to drain at stop (owned by the caller, who closes them)
	 * @param drainTimeout longest wait for enqueued work at stop, for all devices together
	 */
	public GpuLifecycle(GpuDevices devices, Duration drainTimeout) {
		this(devices.contexts(), drainTimeout);
	}

	private GpuLifecycle(List<GpuContext> contexts, Duration drainTimeout) {
		if (contexts.isEmpty()) {
			throw new IllegalArgumentException("At least one context is needed");
		}
		this.contexts = List.copyOf(contexts);
		this.drainTimeout = drainTimeout;
	}

	@Override
	public void start() {
		this.running = this.contexts.stream().anyMatch((context) -> !context.isClosed());
	}

	@Override
	public void stop() {
		if (!this.running) {
			return;
		}
		this.running = false;
		int n = this.contexts.size();
		PoolStats[] before = new PoolStats[n];
		long[] launchesBefore = new long[n];
		long start = System.nanoTime();
		closeBatchers();
		// Stop every pool first, so that the devices drain in parallel, then wait for each.
		for (int i = 0; i < n; i++) {
			GpuContext context = this.contexts.get(i);
			before[i] = context.streams().stats();
			launchesBefore[i] = launches(context);
			context.drain(Duration.ZERO);
		}
		long deadline = start + this.drainTimeout.toNanos();
		for (int i = 0; i < n; i++) {
			GpuContext context = this.contexts.get(i);
			boolean idle = context.drain(Duration.ofNanos(Math.max(0, deadline - System.nanoTime())));
			long millis = Duration.ofNanos(System.nanoTime() - start).toMillis();
			String drained = describe(context, before[i], launchesBefore[i]);
			DeviceInfo device = context.device();
			String what = "GPU work of " + device.backend() + " device " + device.ordinal() + " (" + device.name() + ")";
			if (idle) {
				logger.info("Drained " + what + " in " + millis + " ms: " + drained);
			}
			else {
				logger.warn(what + " did not finish within gpu.shutdown.drain-timeout (" + this.drainTimeout
						+ ", waited " + millis + " ms): " + drained + "; its resources will be released anyway");
			}
		}
	}

	/**
	 * Closes every batcher of every device first, while the pools still lease streams: their queued
	 * items run, in parallel, within the drain timeout; what is left then is abandoned at close.
	 */
	private void closeBatchers() {
		List<GpuBatcher<?, ?>> batchers = new ArrayList<>();
		for (GpuContext context : this.contexts) {
			batchers.addAll(GpuBatcher.openBatchers(context));
		}
		if (batchers.isEmpty()) {
			return;
		}
		long started = System.nanoTime();
		long queued = 0;
		for (GpuBatcher<?, ?> batcher : batchers) {
			queued += batcher.queued();
		}
		boolean clean = BatcherShutdown.closeWithin(batchers, this.drainTimeout);
		long millis = Duration.ofNanos(System.nanoTime() - started).toMillis();
		String names = batchers.stream().map(GpuBatcher::name).toList().toString();
		if (clean) {
			logger.info("Closed GPU batchers " + names + " in " + millis + " ms; the " + queued
					+ ((queued == 1) ? " item" : " items") + " queued at stop ran");
		}
		else {
			logger.warn("GPU batchers " + names + " did not finish within gpu.shutdown.drain-timeout (" + this.drainTimeout
					+ "): items still queued or running then were abandoned at close");
		}
	}

	/** What the drain dealt with: the leases held and the launches that ran while it waited. */
	private String describe(GpuContext context, PoolStats before, long launchesBefore) {
		long launchedDuringDrain = launches(context) - launchesBefore;
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
			MemoryInfo memory = context.memory();
			text.append(", ")
				.append(memory.liveBuffers())
				.append((memory.liveBuffers() == 1) ? " device buffer" : " device buffers")
				.append(" (")
				.append(ByteSizes.format(memory.usedBytes()))
				.append(") left for the context to free");
		}
		catch (ContextClosedException ex) {
			// closed meanwhile: nothing left to report about memory
		}
		return text.toString();
	}

	private static long launches(GpuContext context) {
		long launches = 0;
		for (Kernel kernel : context.launcher().kernels()) {
			launches += kernel.stats().launches();
		}
		return launches;
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
