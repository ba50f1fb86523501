package dev.gpucompute.cpu;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;

import org.junit.jupiter.api.Test;

import dev.gpucompute.GpuException;

/**
 * The registered waits of a CPU stream on their own: which are reached, the smallest target kept
 * for the fast path, which failures a wait covers and claims.
 */
class CpuStreamWaitersTests {

	private final CpuStreamWaiters waiters = new CpuStreamWaiters();

	private final CpuStreamFailures failures = new CpuStreamFailures();

	private static CpuStreamWaiters.Waiter waiter(long target, long from, boolean claims) {
		return new CpuStreamWaiters.Waiter(target, from, claims, (failure) -> {
		});
	}

	@Test
	void noWaitIsReachedUntilTheSmallestTargetIs() {
		assertThat(this.waiters.anyReachedAt(Long.MAX_VALUE - 1)).as("none registered").isFalse();
		this.waiters.add(waiter(7, 0, true));
		this.waiters.add(waiter(3, 0, true));
		assertThat(this.waiters.anyReachedAt(2)).isFalse();
		assertThat(this.waiters.anyReachedAt(3)).isTrue();
	}

	@Test
	void takeReachedRemovesTheReachedInOrderAndKeepsTheNextTarget() {
		CpuStreamWaiters.Waiter five = waiter(5, 0, true);
		CpuStreamWaiters.Waiter three = waiter(3, 0, false);
		CpuStreamWaiters.Waiter nine = waiter(9, 0, true);
		this.waiters.add(five);
		this.waiters.add(three);
		this.waiters.add(nine);
		assertThat(this.waiters.takeReached(5, this.failures)).containsExactly(five, three);
		assertThat(this.waiters.anyReachedAt(8)).as("the next target is 9").isFalse();
		assertThat(this.waiters.anyReachedAt(9)).isTrue();
		assertThat(this.waiters.takeReached(9, this.failures)).containsExactly(nine);
		assertThat(this.waiters.anyReachedAt(Long.MAX_VALUE - 1)).isFalse();
	}

	@Test
	void aReachedWaitClaimsTheFailuresItCoversAndAnInternalOneNone() {
		GpuException second = new GpuException("op 2");
		GpuException fourth = new GpuException("op 4");
		this.failures.keep(2, second, (seq) -> true);
		this.failures.keep(4, fourth, (seq) -> true);
		CpuStreamWaiters.Waiter internal = waiter(4, 0, false);
		CpuStreamWaiters.Waiter fromTwo = waiter(4, 2, true);
		this.waiters.add(internal);
		this.waiters.add(fromTwo);
		List<CpuStreamWaiters.Waiter> reached = this.waiters.takeReached(4, this.failures);
		assertThat(reached).containsExactly(internal, fromTwo);
		assertThat(internal.failure).isNull();
		assertThat(fromTwo.failure).as("(2, 4]: op 4 only").isSameAs(fourth);
		assertThat(this.failures.claim(0, 4)).as("op 2 is before that wait's boundary").isSameAs(second);
	}

	@Test
	void onlyClaimingWaitsCoverAnOperationInTheirRange() {
		this.waiters.add(waiter(6, 2, true));
		this.waiters.add(waiter(10, 0, false));
		assertThat(this.waiters.covers(2)).as("at the boundary").isFalse();
		assertThat(this.waiters.covers(3)).isTrue();
		assertThat(this.waiters.covers(6)).isTrue();
		assertThat(this.waiters.covers(7)).as("only an internal wait reaches it").isFalse();
	}

	@Test
	void takeAllEmptiesTheList() {
		CpuStreamWaiters.Waiter one = waiter(4, 0, true);
		this.waiters.add(one);
		assertThat(this.waiters.takeAll()).containsExactly(one);
		assertThat(this.waiters.anyReachedAt(Long.MAX_VALUE - 1)).isFalse();
		assertThat(this.waiters.covers(3)).isFalse();
		assertThat(this.waiters.takeAll()).isEmpty();
	}

}
