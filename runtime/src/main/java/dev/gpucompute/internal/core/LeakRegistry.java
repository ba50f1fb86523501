package dev.gpucompute.internal.core;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Queue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;

import dev.gpucompute.GpuContext;
import dev.gpucompute.LeakTracker;
import dev.gpucompute.LeakTracker.OpenResource;
import dev.gpucompute.settings.Limits;
import dev.gpucompute.spi.HostThreads;

/**
 * The implementation of {@link LeakTracker}, and the hooks the runtime's handles call: every
 * acquisition ({@link #acquired}) while a tracker is open, every context as it opens and closes.
 * Thread-safe.
 */
public final class LeakRegistry implements LeakTracker {

	/** Trackers open now; acquisitions look at this on every call, so it is cheap to read while empty. */
	private static final CopyOnWriteArrayList<LeakRegistry> ACTIVE = new CopyOnWriteArrayList<>();

	/** Contexts open in this JVM, for the pending-work check. */
	private static final Map<GpuContext, Supplier<String>> OPEN_CONTEXTS = new ConcurrentHashMap<>();

	/** Entries past which closed ones are swept out, so that a long test does not hold millions. */
	private static final int SWEEP_AT = 1024;

	private final Queue<Entry> entries = new ConcurrentLinkedQueue<>();

	private final AtomicInteger size = new AtomicInteger();

	private volatile int sweepAt = SWEEP_AT;

	private final Queue<OpenResource> closedWithContext = new ConcurrentLinkedQueue<>();

	private LeakRegistry() {
	}

	/** Starts recording; close the tracker to stop. */
	public static LeakTracker start() {
		LeakRegistry tracker = new LeakRegistry();
		ACTIVE.add(tracker);
		return tracker;
	}

	/**
	 * The resources acquired since {@link #start()} that their holders have not closed: those of
	 * contexts still open, then those whose context closed while they were open. Each with the
	 * site that acquired it.
	 */
	@Override
	public List<OpenResource> openResources() {
		List<OpenResource> open = new ArrayList<>();
		for (Entry entry : this.entries) {
			if (entry.resource.isOpen() && !entry.resource.context().isClosed()) {
				open.add(entry.report(false));
			}
		}
		open.addAll(this.closedWithContext);
		return open;
	}

	/**
	 * Work in flight now on the contexts of this JVM that are open, one line per context that has
	 * some: pooled streams not idle, the calling thread's default stream (or the shared legacy one)
	 * not idle, futures of stream work (copies, {@code completion()}) not complete. A query: nothing
	 * waits. Work on other threads' per-thread default streams is not seen.
	 */
	@Override
	public List<String> pendingWork() {
		List<String> pending = new ArrayList<>();
		for (Supplier<String> context : OPEN_CONTEXTS.values()) {
			String work = context.get();
			if (work != null) {
				pending.add(work);
			}
		}
		return pending;
	}

	/**
	 * {@link #pendingWork()}, after waiting up to {@code grace} (polling, every few milliseconds) for
	 * the work in flight to finish: what is still running then. Closing a buffer enqueues its free on
	 * its stream, so a stream is briefly busy after correct code too; a grace of some hundred
	 * milliseconds tells that apart from work nobody waited for.
	 * @throws IllegalArgumentException when {@code grace} is negative
	 */
	@Override
	public List<String> pendingWork(Duration grace) {
		long deadline = System.nanoTime() + Limits.nanos(grace, "grace");
		List<String> pending = pendingWork();
		while (!pending.isEmpty() && System.nanoTime() - deadline < 0) {
			java.util.concurrent.locks.LockSupport.parkNanos(2_000_000);
			if (Thread.interrupted()) {
				Thread.currentThread().interrupt();
				break;
			}
			pending = pendingWork();
		}
		return pending;
	}

	/** Stops recording. Idempotent. */
	@Override
	public void close() {
		ACTIVE.remove(this);
	}

	// ---- hooks for the runtime's handles and contexts ---------------------------------------------

	/** Whether any tracker is open, so acquisitions record their sites. */
	public static boolean active() {
		return !ACTIVE.isEmpty();
	}

	/** Called by every acquisition on the acquiring thread; a no-op without an open tracker. */
	public static void acquired(Tracked resource) {
		if (ACTIVE.isEmpty()) {
			return;
		}
		Entry entry = new Entry(resource, HostThreads.name(Thread.currentThread()));
		for (LeakRegistry tracker : ACTIVE) {
			tracker.add(entry);
		}
	}

	/**
	 * A context opened; {@code workInFlight} describes the work it has in flight now, or answers
	 * {@code null} when it has none (see {@link #pendingWork()}).
	 */
	public static void opened(GpuContext context, Supplier<String> workInFlight) {
		OPEN_CONTEXTS.put(context, workInFlight);
	}

	/** Called when a context starts closing: what is still open then is released by the context, not its holder. */
	public static void closing(GpuContext context) {
		OPEN_CONTEXTS.remove(context);
		for (LeakRegistry tracker : ACTIVE) {
			for (Entry entry : tracker.entries) {
				if (entry.resource.context() == context && entry.resource.isOpen()) {
					tracker.closedWithContext.add(entry.report(true));
				}
			}
		}
	}

	private void add(Entry entry) {
		this.entries.add(entry);
		if (this.size.incrementAndGet() >= this.sweepAt) {
			sweep();
		}
	}

	private synchronized void sweep() {
		int left = 0;
		for (var iterator = this.entries.iterator(); iterator.hasNext();) {
			if (iterator.next().resource.isOpen()) {
				left++;
			}
			else {
				iterator.remove();
			}
		}
		this.size.set(left);
		this.sweepAt = Math.max(SWEEP_AT, 2 * left);
	}

	private record Entry(Tracked resource, String thread) {

		Entry {
			Objects.requireNonNull(resource, "resource");
		}

		OpenResource report(boolean closedWithContext) {
			Throwable site = this.resource.acquisitionSite();
			return new OpenResource(this.resource.kind(), this.resource.describe(), this.resource.context(), this.thread,
					(site != null) ? site : new Throwable("acquisition site not recorded"), closedWithContext);
		}

	}


}
