package dev.gpucompute;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Queue;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;

import dev.gpucompute.internal.core.Tracked;
import dev.gpucompute.internal.pool.Pool;

/**
 * Records the stream leases, device buffers and events acquired while it is open, on every
 * {@link GpuContext} of this JVM, with the site that acquired each; then tells which of them are
 * still open and which contexts still have work in flight. For test support (the
 * {@code @GpuLeakCheck} extension of {@code gpu-compute-spring-boot-test} is built on it) and
 * diagnostics; not for production paths.
 *
 * <pre>{@code
 * try (LeakTracker tracker = LeakTracker.start()) {
 *     ... code under test ...
 *     assert tracker.openResources().isEmpty() : tracker.openResources();
 * }
 * }</pre>
 *
 * <p>While any tracker is open, every acquisition records its site (a stack walk, as with
 * {@code leakDetectionThreshold}), so acquisitions cost more; with none open they cost one volatile
 * read more. Resources acquired before {@link #start()} are never reported. Work of every thread is
 * seen, so two tests that run at the same time on the same context see each other's resources.
 *
 * <p>Thread-safe. The caller owns a tracker and closes it; closing stops recording.
 */
public final class LeakTracker implements AutoCloseable {

	/** The kind of a resource the tracker follows. */
	public enum Kind {

		STREAM_LEASE, DEVICE_BUFFER, EVENT

	}

	/**
	 * A resource acquired while the tracker was open and not closed by its holder.
	 *
	 * @param kind what it is
	 * @param description what it is, in words ("Device buffer of 64 bytes on pool-2")
	 * @param context the context it belongs to
	 * @param thread the name of the thread that acquired it
	 * @param acquiredAt a throwable whose stack trace is the acquisition site
	 * @param closedWithContext whether its context was closed while it was still open (the context
	 * released it then; its holder never closed it)
	 */
	public record OpenResource(Kind kind, String description, GpuContext context, String thread, Throwable acquiredAt,
			boolean closedWithContext) {

		@Override
		public String toString() {
			return this.description + " (" + this.context + "), acquired on thread '" + this.thread + "'"
					+ (this.closedWithContext ? ", still open when its context closed" : "");
		}

	}

	/** Trackers open now; acquisitions look at this on every call, so it is cheap to read while empty. */
	private static final CopyOnWriteArrayList<LeakTracker> ACTIVE = new CopyOnWriteArrayList<>();

	/** Contexts open in this JVM, for the pending-work check. */
	private static final Set<GpuContext> OPEN_CONTEXTS = ConcurrentHashMap.newKeySet();

	/** Entries past which closed ones are swept out, so that a long test does not hold millions. */
	private static final int SWEEP_AT = 1024;

	private final Queue<Entry> entries = new ConcurrentLinkedQueue<>();

	private final AtomicInteger size = new AtomicInteger();

	private volatile int sweepAt = SWEEP_AT;

	private final Queue<OpenResource> closedWithContext = new ConcurrentLinkedQueue<>();

	private LeakTracker() {
	}

	/** Starts recording; close the tracker to stop. */
	public static LeakTracker start() {
		LeakTracker tracker = new LeakTracker();
		ACTIVE.add(tracker);
		return tracker;
	}

	/**
	 * The resources acquired since {@link #start()} that their holders have not closed: those of
	 * contexts still open, then those whose context closed while they were open. Each with the
	 * site that acquired it.
	 */
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
	public List<String> pendingWork() {
		List<String> pending = new ArrayList<>();
		for (GpuContext context : OPEN_CONTEXTS) {
			String work = workInFlight(context);
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
	public List<String> pendingWork(java.time.Duration grace) {
		long deadline = System.nanoTime() + Checks.nanos(grace, "grace");
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

	private static String workInFlight(GpuContext context) {
		List<String> parts = new ArrayList<>();
		try {
			if (((Pool) context.streams()).anyBusy()) {
				parts.add("a pooled stream has work in flight");
			}
			int completions = context.load().pendingWork();
			if (completions > 0) {
				parts.add(completions + ((completions == 1) ? " future of stream work is" : " futures of stream work are")
						+ " not complete");
			}
			GpuStream own = context.defaultStream();
			if (!own.isIdle()) {
				parts.add("the default stream " + own.name() + " has work in flight");
			}
		}
		catch (RuntimeException ex) {
			return null; // closed meanwhile, or the device failed: nothing left that runs
		}
		return parts.isEmpty() ? null : context + ": " + String.join(", ", parts);
	}

	/** Stops recording. Idempotent. */
	@Override
	public void close() {
		ACTIVE.remove(this);
	}

	// ---- hooks for the runtime's implementation (not for applications) ----------------------------

	/** Whether any tracker is open, so acquisitions record their sites. */
	public static boolean active() {
		return !ACTIVE.isEmpty();
	}

	/** Called by every acquisition on the acquiring thread; a no-op without an open tracker. */
	public static void acquired(Tracked resource) {
		if (ACTIVE.isEmpty()) {
			return;
		}
		Entry entry = new Entry(resource, Thread.currentThread().getName());
		for (LeakTracker tracker : ACTIVE) {
			tracker.add(entry);
		}
	}

	public static void opened(GpuContext context) {
		OPEN_CONTEXTS.add(context);
	}

	/** Called when a context starts closing: what is still open then is released by the context, not its holder. */
	public static void closing(GpuContext context) {
		OPEN_CONTEXTS.remove(context);
		for (LeakTracker tracker : ACTIVE) {
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
