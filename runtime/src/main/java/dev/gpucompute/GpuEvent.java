package dev.gpucompute;

import java.lang.ref.Cleaner;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicBoolean;

import dev.gpucompute.spi.NativeEvent;
import dev.gpucompute.internal.core.Leaks;
import dev.gpucompute.internal.core.Tracked;

/**
 * A marker in a stream: after {@link #record(GpuStream)}, it completes when the work enqueued on
 * that stream before the record is done. Other streams wait for it with
 * {@link GpuStream#waitFor(GpuEvent)} (without blocking the host); the host waits with
 * {@link #synchronize()}. An event never recorded is complete, as in CUDA. Recording again moves
 * the marker; waits already enqueued keep the record they saw.
 *
 * <p>Created by {@link EventRegistry}; the caller owns it and closes it, which returns it to the
 * registry for reuse. With leak detection on, an event dropped without close is returned by a
 * cleaner and logged with its creation site; without, it stays allocated until the context closes. Methods are thread-safe; after close every method but {@code close} raises
 * {@link GpuException}.
 */
public final class GpuEvent implements AutoCloseable {

	private final EventRegistry registry;

	private final Handle handle;

	private final Cleaner.Cleanable cleanable;

	private volatile boolean recorded;

	GpuEvent(EventRegistry registry, NativeEvent event, Throwable site) {
		this.registry = registry;
		this.handle = new Handle(registry, event, site);
		// The safety net costs more than the event; it is paid only with leak detection on.
		this.cleanable = (site != null) ? Leaks.CLEANER.register(this, this.handle) : null;
		LeakTracker.acquired(this.handle);
	}

	/** Whether this event measures time ({@link EventRegistry#createTiming()}). */
	public boolean isTiming() {
		return this.handle.event.timing();
	}

	/** Whether it has been recorded at least once. */
	public boolean isRecorded() {
		return this.recorded;
	}

	/** Captures the work enqueued on {@code stream} so far. */
	public GpuEvent record(GpuStream stream) {
		Objects.requireNonNull(stream, "stream");
		NativeEvent event = use(stream.context());
		event.record(stream.use());
		this.recorded = true;
		return this;
	}

	/**
	 * Blocks the calling thread until the recorded work is done; returns at once when never recorded.
	 * @throws KernelLaunchException when a kernel among the work before the record failed and its
	 * failure was not reported yet (it then counts as reported, as with {@link GpuStream#synchronize()})
	 */
	public void synchronize() {
		NativeEvent event = use(this.registry.context());
		if (this.recorded) {
			event.synchronize();
		}
	}

	/** Whether the recorded work is done; true when never recorded (also for an event reused from the registry). */
	public boolean isComplete() {
		NativeEvent event = use(this.registry.context());
		return !this.recorded || event.query();
	}

	/**
	 * Device time between {@code start} and this event, waiting for both to complete.
	 * @throws GpuException when either is not a timing event or was never recorded
	 */
	public Duration elapsedSince(GpuEvent start) {
		Objects.requireNonNull(start, "start");
		NativeEvent end = use(this.registry.context());
		NativeEvent begin = start.use(this.registry.context());
		if (!isTiming() || !start.isTiming()) {
			throw new GpuException("elapsedSince needs two timing events; create them with EventRegistry.createTiming()");
		}
		if (!this.recorded || !start.recorded) {
			throw new GpuException("elapsedSince needs two recorded events, but the "
					+ (start.recorded ? "end" : "start") + " event was never recorded");
		}
		float millis = end.elapsedMillisSince(begin);
		return Duration.ofNanos(Math.round(millis * 1_000_000d));
	}

	/** The backend event for a wait by a stream of {@code caller}, which may be another device of the same group. */
	NativeEvent useForWait(GpuContext caller) {
		caller.ensureSameOrPeer(this.registry.context(), "Event");
		if (this.handle.closed.get()) {
			throw new GpuException("Event used after it was closed");
		}
		return this.handle.event;
	}

	NativeEvent use(GpuContext caller) {
		this.registry.context().ensureOpen();
		caller.ensureSame(this.registry.context(), "Event");
		if (this.handle.closed.get()) {
			throw new GpuException("Event used after it was closed");
		}
		return this.handle.event;
	}

	/** Returns the event to the registry. Idempotent; a no-op after the context closed. */
	@Override
	public void close() {
		this.handle.explicit = true;
		if (this.cleanable != null) {
			this.cleanable.clean();
		}
		else {
			this.handle.run();
		}
	}

	/** The state the leak cleaner needs; must not refer to the event object. */
	private static final class Handle implements Runnable, Tracked {

		private final EventRegistry registry;

		private final NativeEvent event;

		private final Throwable site;

		private final AtomicBoolean closed = new AtomicBoolean();

		private volatile boolean explicit;

		Handle(EventRegistry registry, NativeEvent event, Throwable site) {
			this.registry = registry;
			this.event = event;
			this.site = site;
		}

		@Override
		public GpuContext context() {
			return this.registry.context();
		}

		@Override
		public LeakTracker.Kind kind() {
			return LeakTracker.Kind.EVENT;
		}

		@Override
		public boolean isOpen() {
			return !this.closed.get();
		}

		@Override
		public String describe() {
			return this.event.timing() ? "Timing event" : "Event";
		}

		@Override
		public Throwable acquisitionSite() {
			return this.site;
		}

		@Override
		public void run() {
			if (this.closed.compareAndSet(false, true)) {
				if (!this.explicit) {
					Leaks.report("Event", this.site);
				}
				this.registry.releaseUserEvent(this.event);
			}
		}

	}

}
