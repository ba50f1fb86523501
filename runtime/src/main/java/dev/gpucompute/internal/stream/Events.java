package dev.gpucompute.internal.stream;

import java.util.ArrayList;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import dev.gpucompute.EventRegistry;
import dev.gpucompute.GpuEvent;
import dev.gpucompute.internal.core.ContextState;
import dev.gpucompute.internal.core.LeakRegistry;
import dev.gpucompute.internal.core.Leaks;
import dev.gpucompute.settings.KernelTiming;
import dev.gpucompute.spi.DeviceBackend;
import dev.gpucompute.spi.NativeEvent;
import dev.gpucompute.spi.NativeStream;

/**
 * The implementation of {@link EventRegistry}: creates, recycles and tracks the events of one
 * context, the callers' ({@link EventHandle}) and the runtime's own (fork and join, cross-stream
 * waits, launch timing). Thread-safe; the context destroys every event at close.
 */
public final class Events implements EventRegistry {


	private static final Logger log = LoggerFactory.getLogger(EventRegistry.class);

	/** Free events kept per kind; more are destroyed on release. */
	/** Enough for {@link KernelTiming#MAX_SAMPLES_IN_FLIGHT} timed launches, two events each. */
	private static final int MAX_CACHED = 2 * KernelTiming.MAX_SAMPLES_IN_FLIGHT;

	private final DeviceBackend backend;

	private final ContextState lifecycle;

	private final boolean recordSites;

	private final ConcurrentLinkedDeque<NativeEvent> freePlain = new ConcurrentLinkedDeque<>();

	private final ConcurrentLinkedDeque<NativeEvent> freeTiming = new ConcurrentLinkedDeque<>();

	private final AtomicInteger cachedPlain = new AtomicInteger();

	private final AtomicInteger cachedTiming = new AtomicInteger();

	/** Every event not yet destroyed, so that close destroys them all. */
	private final Set<NativeEvent> all = ConcurrentHashMap.newKeySet();

	/** Events held by callers ({@link GpuEvent}s not yet closed). */
	private final AtomicInteger inUse = new AtomicInteger();

	/** Events held by the runtime itself, briefly: fork/join, waits, launch timing. */
	private final AtomicInteger internal = new AtomicInteger();

	private final AtomicLong created = new AtomicLong();

	private final AtomicLong destroyed = new AtomicLong();

	private volatile boolean closed;

	/**
	 * @param backend creates the backend events
	 * @param lifecycle the context's, checked on every creation
	 * @param recordSites whether events record where they were created (leak detection is on)
	 */
	public Events(DeviceBackend backend, ContextState lifecycle, boolean recordSites) {
		this.backend = backend;
		this.lifecycle = lifecycle;
		this.recordSites = recordSites;
	}

	@Override
	public GpuEvent create() {
		this.lifecycle.ensureOpen();
		NativeEvent event = take(false);
		this.inUse.incrementAndGet();
		return new EventHandle(this, event, Leaks.site(this.recordSites || LeakRegistry.active(), "Event"));
	}

	@Override
	public GpuEvent createTiming() {
		this.lifecycle.ensureOpen();
		NativeEvent event = take(true);
		this.inUse.incrementAndGet();
		return new EventHandle(this, event, Leaks.site(this.recordSites || LeakRegistry.active(), "Timing event"));
	}

	/** The backend of the device these events belong to. */
	public DeviceBackend backend() {
		return this.backend;
	}

	/** The lifecycle of the context these events belong to. */
	public ContextState lifecycle() {
		return this.lifecycle;
	}

	/** An event for the runtime's own use (fork/join, cross-stream waits, launch timing). */
	public NativeEvent acquireNative(boolean timing) {
		NativeEvent event = take(timing);
		this.internal.incrementAndGet();
		return event;
	}

	public void releaseNative(NativeEvent event) {
		this.internal.decrementAndGet();
		recycle(event);
	}

	/**
	 * Makes all work enqueued on {@code waiter} from now on wait for the work enqueued on
	 * {@code source} so far, with a recycled event; the host does not block. The wait captures the
	 * record, so the event goes back at once.
	 */
	public void order(NativeStream waiter, NativeStream source) {
		NativeEvent marker = acquireNative(false);
		try {
			marker.record(source);
			waiter.waitEvent(marker);
		}
		finally {
			releaseNative(marker);
		}
	}

	/** Called once per {@link GpuEvent}, by its close or by the leak cleaner. */
	void releaseUserEvent(NativeEvent event) {
		this.inUse.decrementAndGet();
		recycle(event);
	}

	private NativeEvent take(boolean timing) {
		ConcurrentLinkedDeque<NativeEvent> free = timing ? this.freeTiming : this.freePlain;
		NativeEvent event = free.pollLast();
		if (event != null) {
			(timing ? this.cachedTiming : this.cachedPlain).decrementAndGet();
			return event;
		}
		event = this.backend.createEvent(timing);
		this.all.add(event);
		this.created.incrementAndGet();
		return event;
	}

	private void recycle(NativeEvent event) {
		if (this.closed) {
			return; // destroyAll has destroyed it
		}
		AtomicInteger cached = event.timing() ? this.cachedTiming : this.cachedPlain;
		if (cached.incrementAndGet() <= MAX_CACHED) {
			(event.timing() ? this.freeTiming : this.freePlain).addLast(event);
		}
		else {
			cached.decrementAndGet();
			destroy(event);
		}
	}

	private void destroy(NativeEvent event) {
		if (this.all.remove(event)) {
			try {
				event.destroy();
			}
			catch (RuntimeException ex) {
				log.warn("Destroying an event failed", ex);
			}
			this.destroyed.incrementAndGet();
		}
	}

	/** Destroys every event, cached or still held. Called once by the context after draining. */
	public void destroyAll() {
		this.closed = true;
		int held = this.inUse.get();
		this.internal.set(0);
		if (held > 0) {
			log.warn("{} events were still open at context close; destroying them", held);
		}
		for (NativeEvent event : new ArrayList<>(this.all)) {
			destroy(event);
		}
		this.freePlain.clear();
		this.freeTiming.clear();
		this.cachedPlain.set(0);
		this.cachedTiming.set(0);
	}

	/**
	 * Events handed out by {@link #create()} / {@link #createTiming()} and not yet closed: the figure
	 * that shows leaks. The runtime's own events (launch timing, fork/join) are counted apart.
	 */
	@Override
	public int inUse() {
		return this.inUse.get();
	}

	@Override
	public int live() {
		return this.all.size();
	}

	@Override
	public EventStats stats() {
		return new EventStats(this.all.size(), this.inUse.get(), this.internal.get(),
				this.cachedPlain.get() + this.cachedTiming.get(), this.created.get(), this.destroyed.get());
	}
}
