package dev.gpucompute.internal.core;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;

/** The count of operations in progress that close lets finish. */
class WorkGateTests {

	private final WorkGate gate = new WorkGate();

	@Test
	void closeRefusesNewOperationsAndWaitsForThoseInside() throws Exception {
		assertThat(this.gate.enter()).isTrue();
		this.gate.refuse();
		assertThat(this.gate.enter()).as("refused once close began").isFalse();
		CountDownLatch waiting = new CountDownLatch(1);
		CompletableFuture<Boolean> emptied = CompletableFuture.supplyAsync(() -> {
			waiting.countDown();
			return this.gate.awaitEmpty(System.nanoTime() + TimeUnit.SECONDS.toNanos(30));
		});
		waiting.await();
		Thread.sleep(50);
		assertThat(emptied).as("waits while an operation is inside").isNotDone();
		this.gate.exit();
		assertThat(emptied.get(10, TimeUnit.SECONDS)).isTrue();
	}

	@Test
	void theWaitEndsAtItsDeadlineWhenAnOperationStaysInside() {
		assertThat(this.gate.enter()).isTrue();
		this.gate.refuse();
		assertThat(this.gate.awaitEmpty(System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(20))).isFalse();
		this.gate.exit();
		assertThat(this.gate.awaitEmpty(System.nanoTime())).as("empty: no wait").isTrue();
	}

	@Test
	void aRefusedEntryLeavesNothingCounted() {
		this.gate.refuse();
		for (int i = 0; i < 1000; i++) {
			assertThat(this.gate.enter()).isFalse();
		}
		assertThat(this.gate.awaitEmpty(System.nanoTime())).isTrue();
	}

}
