package dev.gpucompute;

import java.util.ArrayList;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import dev.gpucompute.spi.NativeEvent;
import dev.gpucompute.spi.NativeStream;
import dev.gpucompute.internal.core.Leaks;

/**
 * Creates, recycles and tracks the events of one context. Closed events go back to a free list and
 * are handed out again, since creating a backend event costs far more than reusing one; every event
 * is destroyed when the context closes. {@link #stats()} tells how many are in use, which is how
 * tests and operators spot leaks.
 *
 * <p>Thread-safe. Events returned by {@link #create()} and {@link #createTiming()} are owned by the
 * caller, who closes them (try-with-resources); an event never closed is reported by the leak
 * cleaner and recycled.
 */
public final class EventRegistry {

	private static final Logger log = LoggerFactory.getLogger(EventRegistry.class);

	/** Free events kept per kind; more are destroyed on release. */
	/** Enough for {@link KernelTiming#MAX_SAMPLES_IN_FLIGHT} timed launches, two events each. */
	private static final int MAX_CACHED = 2 * KernelTiming.MAX_SAMPLES_IN_FLIGHT;

	private final GpuContext context;

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

	EventRegistry(GpuContext context, boolean recordSites) {
		this.context = context;
		this.recordSites = recordSites;
	}

	/** A new event without timing, for ordering. The caller closes it. */
	public GpuEvent create() {
		this.context.ensureOpen();
		NativeEvent event = take(false);
		this.inUse.incrementAndGet();
		return new GpuEvent(this, event, Leaks.site(this.recordSites || LeakTracker.active(), "Event"));
	}

	/** A new event with timing, for {@link GpuEvent#elapsedSince(GpuEvent)}. The caller closes it. */
	public GpuEvent createTiming() {
		this.context.ensureOpen();
		NativeEvent event = take(true);
		this.inUse.incrementAndGet();
		return new GpuEvent(this, event, Leaks.site(this.recordSites || LeakTracker.active(), "Timing event"));
	}

	GpuContext context() {
		return this.context;
	}

	/** An event for the runtime's own use (fork/join, cross-stream waits, launch timing). */
	NativeEvent acquireNative(boolean timing) {
		NativeEvent event = take(timing);
		this.internal.incrementAndGet();
		return event;
	}

	void releaseNative(NativeEvent event) {
		this.internal.decrementAndGet();
		recycle(event);
	}

	/**
	 * Makes all work enqueued on {@code waiter} from now on wait for the work enqueued on
	 * {@code source} so far, with a recycled event; the host does not block. The wait captures the
	 * record, so the event goes back at once.
	 */
	void order(NativeStream waiter, NativeStream source) {
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
		event = this.context.backendHandle().createEvent(timing);
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
	void destroyAll() {
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
	public int inUse() {
		return this.inUse.get();
	}

	/** Events the runtime holds for its own work right now (timed launches not yet read, joins). */
	public int internal() {
		return this.internal.get();
	}

	/** Events not yet destroyed: in use plus cached for reuse. Zero after the context closed. */
	public int live() {
		return this.all.size();
	}

	public EventStats stats() {
		return new EventStats(this.all.size(), this.inUse.get(), this.internal.get(),
				this.cachedPlain.get() + this.cachedTiming.get(), this.created.get(), this.destroyed.get());
	}

	/**
	 * A snapshot of the registry.
	 *
	 * @param live events not yet destroyed (in use + internal + cached)
	 * @param inUse events handed out to callers and not yet closed
	 * @param internal events the runtime holds for its own work (timed launches, joins)
	 * @param cached closed events kept for reuse
	 * @param created backend events created since open
	 * @param destroyed backend events destroyed since open
	 */
	public record EventStats(int live, int inUse, int internal, int cached, long created, long destroyed) {
	}

}
