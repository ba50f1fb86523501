package dev.gpucompute.cuda;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;

/**
 * The completion thread's waits between polls, on a clock the test moves: it spins (no sleep,
 * whose timer slack alone would make a 1 MiB copy's completion 60-110 µs late) within the spin
 * window after progress, then sleeps 10 µs doubling to 100 µs, and progress starts the window again.
 */
class CompletionPollingTests {

	private static final long US = TimeUnit.MICROSECONDS.toNanos(1);

	@Test
	void spinsWithinTheWindowAfterProgress() {
		CompletionPolling polling = new CompletionPolling();
		long start = 1_000_000_000L;
		polling.progress(start);
		assertThat(polling.afterMiss(start)).isZero();
		assertThat(polling.afterMiss(start + 27 * US)).isZero();
		assertThat(polling.afterMiss(start + CompletionPolling.SPIN_NANOS - 1)).isZero();
	}

	@Test
	void sleepsDoubleFromTenMicrosecondsToTheCapOnceTheWindowIsOver() {
		CompletionPolling polling = new CompletionPolling();
		long start = 5L;
		polling.progress(start);
		long now = start + CompletionPolling.SPIN_NANOS;
		assertThat(polling.afterMiss(now)).isEqualTo(10 * US);
		assertThat(polling.afterMiss(now + 10 * US)).isEqualTo(20 * US);
		assertThat(polling.afterMiss(now + 30 * US)).isEqualTo(40 * US);
		assertThat(polling.afterMiss(now + 70 * US)).isEqualTo(80 * US);
		assertThat(polling.afterMiss(now + 150 * US)).isEqualTo(100 * US);
		assertThat(polling.afterMiss(now + 10_000 * US)).isEqualTo(100 * US);
	}

	@Test
	void progressStartsTheSpinWindowAgain() {
		CompletionPolling polling = new CompletionPolling();
		polling.progress(0);
		assertThat(polling.afterMiss(CompletionPolling.SPIN_NANOS + 1)).isPositive();
		assertThat(polling.afterMiss(CompletionPolling.SPIN_NANOS + 20 * US)).isEqualTo(20 * US);
		long later = 10 * CompletionPolling.SPIN_NANOS;
		polling.progress(later);
		assertThat(polling.afterMiss(later + US)).isZero();
		assertThat(polling.afterMiss(later + CompletionPolling.SPIN_NANOS)).isEqualTo(10 * US);
	}

	@Test
	void theClockMayWrapAround() {
		CompletionPolling polling = new CompletionPolling();
		long start = Long.MAX_VALUE - 10 * US;
		polling.progress(start);
		assertThat(polling.afterMiss(start + 50 * US)).isZero();
		assertThat(polling.afterMiss(start + CompletionPolling.SPIN_NANOS + US)).isEqualTo(10 * US);
	}

}
