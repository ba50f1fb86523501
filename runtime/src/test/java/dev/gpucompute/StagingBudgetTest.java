package dev.gpucompute;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

import org.junit.jupiter.api.Test;

/** The staging budget on its own: first come first served, and nothing overtakes a waiter. */
class StagingBudgetTest {

	private static void await(BooleanSupplier condition) {
		long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
		while (!condition.getAsBoolean() && System.nanoTime() < deadline) {
			try {
				Thread.sleep(2);
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
				return;
			}
		}
	}

	@Test
	void theBudgetServesWaitersInOrderAndNothingOvertakesThem() throws Exception {
		StagingBudget budget = new StagingBudget(4, Duration.ofSeconds(30));
		budget.acquire(3);
		CompletableFuture<Void> large = CompletableFuture.runAsync(() -> budget.acquire(3));
		await(() -> budget.waiting() == 1);
		assertThat(budget.contended()).isTrue();
		assertThat(budget.tryAcquire(1)).as("fits, but a copy waits").isFalse();
		budget.release(1);
		assertThat(large).as("2 of 3 free").isNotDone();
		budget.release(2);
		large.get(10, TimeUnit.SECONDS);
		assertThat(budget.used()).isEqualTo(3);
		assertThat(budget.waiting()).isZero();
		assertThat(budget.tryAcquire(1)).isTrue();
		assertThat(budget.tryAcquire(1)).as("full").isFalse();
		assertThatThrownBy(() -> budget.acquire(5)).isInstanceOf(IllegalArgumentException.class);
	}

	@Test
	void anInterruptedWaiterReservesNothingAndKeepsItsInterrupt() {
		StagingBudget budget = new StagingBudget(4, Duration.ofSeconds(30));
		budget.acquire(4);
		Thread.currentThread().interrupt();
		try {
			assertThatThrownBy(() -> budget.acquire(1)).isInstanceOf(GpuException.class)
				.hasMessage("Interrupted while waiting for staging memory");
			assertThat(Thread.currentThread().isInterrupted()).isTrue();
		}
		finally {
			Thread.interrupted();
		}
		assertThat(budget.waiting()).isZero();
		budget.release(4);
		assertThat(budget.used()).isZero();
		assertThat(budget.timeouts()).isZero();
	}

	@Test
	void aZeroTimeoutFailsAtOnceWhenThereIsNoRoom() {
		StagingBudget budget = new StagingBudget(4, Duration.ZERO);
		budget.acquire(4);
		assertThatThrownBy(() -> budget.acquire(1)).isInstanceOf(StagingExhaustedException.class)
			.hasMessageContaining("no room for 1 bytes after 0 ms (in use 4 of a budget of 4 bytes, 0 other copies waiting)");
		assertThat(budget.timeouts()).isEqualTo(1);
		assertThat(budget.used()).isEqualTo(4);
	}

}
