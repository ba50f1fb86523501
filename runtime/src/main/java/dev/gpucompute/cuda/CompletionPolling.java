package dev.gpucompute.cuda;

import java.util.concurrent.TimeUnit;

/**
 * How long the completion thread waits between two polls of its queued events while work is in
 * flight: not at all (a spin, {@code 0}) for {@link #SPIN_NANOS} after the last sign of progress
 * (a callback run, or an event queued on a stream with nothing else queued), then sleeps that double from {@link #FIRST_SLEEP_NANOS} up to
 * {@link #MAX_SLEEP_NANOS}.
 *
 * <p>Why a spin window: a sleep of any length costs at least the kernel's timer slack (50 µs by
 * default on Linux), so a poller that sleeps right after its first miss sees a 1 MiB page-locked copy
 * (about 27 µs on an H200's bus) 60-110 µs late, and the copy's future completes at a third of the
 * bus speed. {@code cuStreamSynchronize}, which the raw baselines use, spins too (the driver's
 * default scheduling when there are fewer contexts than cores). The spin is bounded: an idle
 * backend never spins, and work that runs longer than the window costs one window of one core per
 * completion, then sleeps of at most 100 µs.
 *
 * <p>Not thread-safe: only the completion thread uses its instance.
 */
final class CompletionPolling {

	/** Spin this long after the last progress before sleeping. */
	static final long SPIN_NANOS = TimeUnit.MICROSECONDS.toNanos(100);

	/** The first sleep once the spin window is over. */
	static final long FIRST_SLEEP_NANOS = TimeUnit.MICROSECONDS.toNanos(10);

	/** The longest sleep between polls while work is in flight. */
	static final long MAX_SLEEP_NANOS = TimeUnit.MICROSECONDS.toNanos(100);

	private long lastProgress;

	private long sleep;

	/** Something happened at {@code now} (a callback ran, a stream became busy): spin again. */
	void progress(long now) {
		this.lastProgress = now;
		this.sleep = 0;
	}

	/**
	 * A poll at {@code now} found nothing done.
	 * @return 0 to poll again at once (after {@link Thread#onSpinWait()}), else how long to sleep
	 */
	long afterMiss(long now) {
		if (now - this.lastProgress < SPIN_NANOS) {
			return 0;
		}
		this.sleep = (this.sleep == 0) ? FIRST_SLEEP_NANOS : Math.min(this.sleep * 2, MAX_SLEEP_NANOS);
		return this.sleep;
	}

}
