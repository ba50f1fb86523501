package dev.gpucompute.contract.pool;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.IntSupplier;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuContextBuilder;
import dev.gpucompute.GpuStream;
import dev.gpucompute.PoolExhaustedException;
import dev.gpucompute.PoolTooSmallException;
import dev.gpucompute.StreamLease;
import dev.gpucompute.StreamPool;
import dev.gpucompute.StreamPriority;
import dev.gpucompute.settings.KernelTiming;

/**
 * The stream pool's order of service (docs/runtime.md, "Semantics", item 6): waiting callers
 * are served high priority first and first come first within a priority, a released stream goes to
 * the first waiter rather than to whoever asks next, and a per-priority limit keeps streams for the
 * other priority. Every step is ordered by the pool's own counters ({@code pending}), never by a
 * stopwatch.
 */
public abstract class PoolPriorityContractSuite {

	private GpuContext context;

	private final ExecutorService threads = Executors.newCachedThreadPool();

	/** A builder for the backend under test. */
	protected abstract GpuContextBuilder builder();

	private StreamPool open(int maxSize, GpuContextBuilder builder) {
		this.context = builder.poolSize(0).maxSize(maxSize).acquireTimeout(Duration.ofSeconds(20))
			.kernelTiming(KernelTiming.OFF)
			.open();
		return this.context.streams();
	}

	@AfterEach
	void close() throws InterruptedException {
		this.threads.shutdownNow();
		this.threads.awaitTermination(20, TimeUnit.SECONDS);
		if (this.context != null) {
			this.context.close();
		}
	}

	/** Starts a waiter that records its name when served, holds the lease until told, and waits until it queues. */
	private Future<StreamLease> waiter(StreamPool pool, StreamPriority priority, String name,
			ConcurrentLinkedQueue<String> served) throws InterruptedException {
		int before = pool.stats().pending();
		Future<StreamLease> future = this.threads.submit(() -> {
			StreamLease lease = pool.acquire(priority, Duration.ofSeconds(20));
			served.add(name);
			return lease;
		});
		awaitValue(() -> pool.stats().pending(), before + 1);
		return future;
	}

	private static void awaitValue(IntSupplier value, int expected) throws InterruptedException {
		long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
		while (value.getAsInt() != expected) {
			if (System.nanoTime() > deadline) {
				throw new AssertionError("expected " + expected + ", still " + value.getAsInt());
			}
			Thread.sleep(1);
		}
	}

	@Test
	void highPriorityWaitersAreServedFirstAndEachPriorityInArrivalOrder() throws Exception {
		StreamPool pool = open(2, builder());
		List<StreamLease> held = new ArrayList<>(List.of(pool.acquire(), pool.acquire()));
		ConcurrentLinkedQueue<String> served = new ConcurrentLinkedQueue<>();
		List<Future<StreamLease>> waiters = new ArrayList<>();
		waiters.add(waiter(pool, StreamPriority.NORMAL, "normal-1", served));
		waiters.add(waiter(pool, StreamPriority.NORMAL, "normal-2", served));
		waiters.add(waiter(pool, StreamPriority.HIGH, "high-1", served));
		waiters.add(waiter(pool, StreamPriority.HIGH, "high-2", served));
		// One stream at a time: each release serves exactly the next waiter in order.
		List<String> order = new ArrayList<>();
		for (int i = 0; i < 4; i++) {
			int pending = pool.stats().pending();
			(held.isEmpty() ? waiterLease(waiters, order) : held.remove(0)).close();
			awaitValue(() -> pool.stats().pending(), pending - 1);
			awaitValue(served::size, i + 1);
			order.add(List.copyOf(served).get(i));
		}
		assertThat(order).containsExactly("high-1", "high-2", "normal-1", "normal-2");
		for (Future<StreamLease> waiter : waiters) {
			StreamLease lease = waiter.get(20, TimeUnit.SECONDS);
			lease.close();
		}
		assertThat(pool.stats().active()).isZero();
		assertThat(pool.stats().size()).isLessThanOrEqualTo(2);
	}

	/** The lease of the first waiter that was served and is still held, so that its release serves the next. */
	private static StreamLease waiterLease(List<Future<StreamLease>> waiters, List<String> servedSoFar)
			throws Exception {
		for (Future<StreamLease> waiter : waiters) {
			if (waiter.isDone() && !waiter.get().isClosed()) {
				return waiter.get();
			}
		}
		throw new AssertionError("no served waiter holds a lease; served so far " + servedSoFar);
	}

	@Test
	void aReleasedStreamGoesToTheWaiterNotToANewcomer() throws Exception {
		StreamPool pool = open(1, builder());
		StreamLease held = pool.acquire();
		ConcurrentLinkedQueue<String> served = new ConcurrentLinkedQueue<>();
		Future<StreamLease> waiter = waiter(pool, StreamPriority.NORMAL, "waiter", served);
		held.close();
		// The release handed the stream to the waiter: a caller arriving now, even one that does not
		// wait at all, finds none.
		assertThatThrownBy(() -> pool.acquire(Duration.ZERO)).isInstanceOf(PoolExhaustedException.class);
		waiter.get(20, TimeUnit.SECONDS).close();
		try (StreamLease again = pool.acquire(Duration.ZERO)) {
			assertThat(again.isClosed()).isFalse();
		}
	}

	@Test
	void aNewcomerQueuesBehindAWaiterOfItsPriorityButAHigherOneDoesNot() throws Exception {
		StreamPool pool = open(2, builder());
		StreamLease first = pool.acquire();
		StreamLease second = pool.acquire();
		ConcurrentLinkedQueue<String> served = new ConcurrentLinkedQueue<>();
		// A group of two waits: one free stream is not enough for it, and no single caller behind it may take that one.
		Future<List<StreamLease>> group = this.threads.submit(() -> {
			List<StreamLease> leases = pool.acquireAll(StreamPriority.NORMAL, 2, Duration.ofSeconds(20));
			served.add("group");
			return leases;
		});
		awaitValue(() -> pool.stats().pending(), 1);
		first.close();
		assertThatThrownBy(() -> pool.acquire(Duration.ZERO)).as("a normal caller behind the waiting group")
			.isInstanceOf(PoolExhaustedException.class);
		assertThat(served).isEmpty();
		try (StreamLease high = pool.acquire(StreamPriority.HIGH, Duration.ZERO)) {
			assertThat(high.stream().priority()).as("a high-priority caller overtakes normal waiters")
				.isEqualTo(StreamPriority.HIGH);
		}
		second.close();
		List<StreamLease> leases = group.get(20, TimeUnit.SECONDS);
		assertThat(leases).hasSize(2);
		leases.forEach(StreamLease::close);
		assertThat(pool.stats().active()).isZero();
	}

	@Test
	void aPriorityLimitKeepsStreamsForTheOtherPriority() throws Exception {
		StreamPool pool = open(4, builder().priorityLimit(StreamPriority.NORMAL, 2));
		assertThat(pool.priorityLimit(StreamPriority.NORMAL)).isEqualTo(2);
		assertThat(pool.priorityLimit(StreamPriority.HIGH)).isEqualTo(4);
		StreamLease a = pool.acquire();
		StreamLease b = pool.acquire();
		assertThatThrownBy(() -> pool.acquire(Duration.ZERO)).as("a third normal lease")
			.isInstanceOf(PoolExhaustedException.class);
		ConcurrentLinkedQueue<String> served = new ConcurrentLinkedQueue<>();
		Future<StreamLease> normal = waiter(pool, StreamPriority.NORMAL, "normal", served);
		// The normal waiter is held back by its own limit, not by the pool: high-priority work is not.
		List<StreamLease> high = List.of(pool.acquire(StreamPriority.HIGH, Duration.ZERO),
				pool.acquire(StreamPriority.HIGH, Duration.ZERO));
		assertThat(served).isEmpty();
		assertThatThrownBy(() -> pool.acquireAll(StreamPriority.NORMAL, 3, Duration.ZERO))
			.isInstanceOf(PoolTooSmallException.class)
			.hasMessageContaining("at most 2 streams of priority NORMAL")
			.hasMessageContaining("gpu.streams.priority-limits.normal");
		a.close();
		normal.get(20, TimeUnit.SECONDS).close();
		assertThat(served).containsExactly("normal");
		b.close();
		high.forEach(StreamLease::close);
		assertThat(pool.stats().active()).isZero();
		assertThat(pool.stats().size()).isLessThanOrEqualTo(4);
	}

	@Test
	void aGroupLargerThanItsPriorityMayEverLeaseFailsAtOnceNamingTheLimitAndLeasesNothing() throws Exception {
		StreamPool pool = open(4, builder().priorityLimit(StreamPriority.NORMAL, 2));
		StreamLease high = pool.acquire(StreamPriority.HIGH);
		Runnable nothing = () -> {
		};
		// From the thread's default stream (NORMAL): three branches need three NORMAL streams at once.
		assertThatThrownBy(() -> this.context.launcher().parallel(nothing, nothing, nothing))
			.isInstanceOfSatisfying(PoolTooSmallException.class, (ex) -> {
				assertThat(ex.requested()).isEqualTo(3);
				assertThat(ex.maxLeasable()).isEqualTo(2);
				assertThat(ex.priority()).isEqualTo(StreamPriority.NORMAL);
				assertThat(ex.isPriorityLimited()).isTrue();
				assertThat(ex.property()).isEqualTo("gpu.streams.priority-limits.normal");
			})
			.hasMessageContaining("Cannot lease 3 streams at once");
		assertThat(pool.stats().active()).as("nothing leased by the refused group").isEqualTo(1);
		assertThat(pool.stats().pending()).as("nobody left waiting").isZero();
		// The same group forked from a HIGH stream runs: HIGH has no limit but the pool's 4 (one held here).
		List<String> ran = new ArrayList<>();
		try (StreamLease lease = pool.acquire(StreamPriority.HIGH)) {
			high.close();
			this.context.launcher().withStream(lease.stream(), () -> this.context.launcher()
				.parallel(() -> ran.add("a"), () -> ran.add("b"), () -> ran.add("c")));
			lease.stream().synchronize();
		}
		assertThat(ran).containsExactly("a", "b", "c");
		assertThat(pool.stats().active()).isZero();
	}

	@Test
	void aWaiterThatTimesOutLetsTheOnesBehindItGo() throws Exception {
		StreamPool pool = open(2, builder());
		StreamLease first = pool.acquire();
		StreamLease second = pool.acquire();
		// A group of two that gives up after 100 ms, with a single caller queued behind it.
		Future<?> group = this.threads.submit(() -> pool.acquireAll(StreamPriority.NORMAL, 2, Duration.ofMillis(100)));
		awaitValue(() -> pool.stats().pending(), 1);
		first.close();
		ConcurrentLinkedQueue<String> served = new ConcurrentLinkedQueue<>();
		Future<StreamLease> single = this.threads.submit(() -> {
			StreamLease lease = pool.acquire(StreamPriority.NORMAL, Duration.ofSeconds(20));
			served.add("single");
			return lease;
		});
		assertThatThrownBy(() -> group.get(20, TimeUnit.SECONDS)).hasCauseInstanceOf(PoolExhaustedException.class);
		single.get(20, TimeUnit.SECONDS).close();
		assertThat(served).containsExactly("single");
		second.close();
		assertThat(pool.stats().active()).isZero();
		assertThat(pool.stats().pending()).isZero();
	}

	@Test
	void parallelBranchesRunAtThePriorityOfTheirParentStream() {
		StreamPool pool = open(4, builder());
		List<StreamPriority> seen = new ArrayList<>();
		try (StreamLease high = pool.acquire(StreamPriority.HIGH)) {
			this.context.launcher().withStream(high.stream(), () -> this.context.launcher()
				.parallel(List.<java.util.function.Consumer<GpuStream>>of((s) -> seen.add(s.priority()),
						(s) -> seen.add(s.priority()))));
		}
		this.context.launcher().parallel(List.<java.util.function.Consumer<GpuStream>>of((s) -> seen.add(s.priority())));
		assertThat(seen).containsExactly(StreamPriority.HIGH, StreamPriority.HIGH, StreamPriority.NORMAL);
		assertThat(pool.stats().active()).isZero();
	}

	@Test
	void priorityLimitsOutsideTheirRangeAreRejected() {
		assertThatThrownBy(() -> builder().priorityLimit(StreamPriority.NORMAL, 0))
			.isInstanceOf(IllegalArgumentException.class)
			.hasMessageContaining("priorityLimit(NORMAL) must be between 1 and 1024");
		assertThatThrownBy(() -> builder().priorityLimit(null, 1)).isInstanceOf(NullPointerException.class);
	}

}
