package dev.gpucompute.autoconfigure;

import java.time.Duration;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;

import org.springframework.context.SmartLifecycle;

import dev.gpucompute.GpuContext;

/**
 * Drains the {@link GpuContext} when the application stops: the stream pool stops handing out
 * leases and the device finishes the work already enqueued, within
 * {@code gpu.shutdown.drain-timeout}. Native resources (streams, events, device memory, the device
 * context) are released later, when the context bean is destroyed, so beans that depend on the
 * context can still close their buffers in their own destroy callbacks.
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
		long start = System.nanoTime();
		boolean idle = this.context.drain(this.drainTimeout);
		if (idle) {
			if (logger.isDebugEnabled()) {
				logger.debug("Drained " + this.context + " in " + Duration.ofNanos(System.nanoTime() - start).toMillis()
						+ " ms");
			}
		}
		else {
			logger.warn("GPU work of " + this.context + " did not finish within gpu.shutdown.drain-timeout ("
					+ this.drainTimeout + "); its resources will be released anyway");
		}
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
