package dev.gpucompute.internal.stream;

import java.lang.ref.Cleaner;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicBoolean;

import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuEvent;
import dev.gpucompute.GpuException;
import dev.gpucompute.GpuStream;
import dev.gpucompute.LeakTracker;
import dev.gpucompute.internal.core.Capture;
import dev.gpucompute.internal.core.Captures;
import dev.gpucompute.internal.core.ContextState;
import dev.gpucompute.internal.core.LeakRegistry;
import dev.gpucompute.internal.core.Leaks;
import dev.gpucompute.internal.core.Tracked;
import dev.gpucompute.spi.NativeEvent;
import dev.gpucompute.spi.NativeStream;
import org.jspecify.annotations.Nullable;

/**
 * The implementation of {@link GpuEvent}: a backend event of its context's {@link Events}, which
 * takes it back when closed (or, with leak detection on, when the cleaner finds it dropped).
 * Thread-safe.
 */
public final class EventHandle implements GpuEvent {

	private final Events registry;

	private final Handle handle;

	private final Cleaner.@Nullable Cleanable cleanable;

	private volatile boolean recorded;

	/** The capture the latest record was made in (it marks a point of that graph), or {@code null}. */
	private volatile @Nullable Capture recordedIn;

	EventHandle(Events registry, NativeEvent event, @Nullable Throwable site) {
		this.registry = registry;
		this.handle = new Handle(registry, event, site);
		// The safety net costs more than the event; it is paid only with leak detection on.
		this.cleanable = (site != null) ? Leaks.CLEANER.register(this, this.handle) : null;
		LeakRegistry.acquired(this.handle);
	}

	/**
	 * The runtime's event behind {@code event}.
	 * @throws GpuException when it is not one of the runtime's events
	 */
	static EventHandle of(GpuEvent event) {
		if (event instanceof EventHandle handle) {
			return handle;
		}
		throw new GpuException("Event " + event + " was not created by the gpu-compute runtime");
	}

	@Override
	public boolean isTiming() {
		return this.handle.event.timing();
	}

	@Override
	public boolean isRecorded() {
		return this.recorded;
	}

	@Override
	public GpuEvent record(GpuStream stream) {
		Objects.requireNonNull(stream, "stream");
		StreamHandle target = StreamHandle.of(stream);
		NativeEvent event = use(target.lifecycle());
		NativeStream on = target.use();
		Captures captures = this.registry.lifecycle().captures();
		Capture capture = captures.any() ? captures.forWork(on, "Recording an event on stream " + stream.name()) : null;
		event.record(on);
		this.recordedIn = capture;
		this.recorded = true;
		return this;
	}

	/** The capture the latest record was made in, or {@code null}. */
	@Nullable Capture recordedIn() {
		return this.recordedIn;
	}

	/** Refuses a host-side wait for this event while a capture is involved (the thread's, or the event's). */
	private void checkHostWait(String operation) {
		Captures captures = this.registry.lifecycle().captures();
		Capture capture = this.recordedIn;
		if (capture != null) {
			throw captures.capturedEvent(operation, capture);
		}
		if (captures.any()) {
			captures.checkHostWait(null, operation);
		}
	}

	@Override
	public void synchronize() {
		NativeEvent event = use(this.registry.lifecycle());
		checkHostWait("Event synchronize()");
		if (this.recorded) {
			event.synchronize();
		}
	}

	@Override
	public boolean isComplete() {
		NativeEvent event = use(this.registry.lifecycle());
		checkHostWait("Event isComplete()");
		return !this.recorded || event.query();
	}

	@Override
	public Duration elapsedSince(GpuEvent start) {
		Objects.requireNonNull(start, "start");
		NativeEvent end = use(this.registry.lifecycle());
		EventHandle first = of(start);
		NativeEvent begin = first.use(this.registry.lifecycle());
		checkHostWait("Event elapsedSince(start)");
		first.checkHostWait("Event elapsedSince(start)");
		if (!isTiming() || !first.isTiming()) {
			throw new GpuException("elapsedSince needs two timing events; create them with EventRegistry.createTiming()");
		}
		if (!this.recorded || !first.recorded) {
			throw new GpuException("elapsedSince needs two recorded events, but the "
					+ (first.recorded ? "end" : "start") + " event was never recorded");
		}
		float millis = end.elapsedMillisSince(begin);
		return Duration.ofNanos(Math.round(millis * 1_000_000d));
	}

	/** The backend event for a wait by a stream of {@code caller}, which may be another device of the same group. */
	NativeEvent useForWait(ContextState caller) {
		caller.ensureSameOrPeer(this.registry.lifecycle(), "Event");
		if (this.handle.closed.get()) {
			throw new GpuException("Event used after it was closed");
		}
		return this.handle.event;
	}

	private NativeEvent use(ContextState caller) {
		this.registry.lifecycle().ensureOpen();
		caller.ensureSame(this.registry.lifecycle(), "Event", "");
		if (this.handle.closed.get()) {
			throw new GpuException("Event used after it was closed");
		}
		return this.handle.event;
	}

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

		private final Events registry;

		private final NativeEvent event;

		private final @Nullable Throwable site;

		private final AtomicBoolean closed = new AtomicBoolean();

		private volatile boolean explicit;

		Handle(Events registry, NativeEvent event, @Nullable Throwable site) {
			this.registry = registry;
			this.event = event;
			this.site = site;
		}

		@Override
		public GpuContext context() {
			return this.registry.lifecycle().owner();
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
		public @Nullable Throwable acquisitionSite() {
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
