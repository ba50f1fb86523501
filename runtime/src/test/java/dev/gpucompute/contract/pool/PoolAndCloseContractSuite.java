package dev.gpucompute.contract.pool;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;

import org.junit.jupiter.api.Test;

import dev.gpucompute.ContextClosedException;
import dev.gpucompute.ContextMismatchException;
import dev.gpucompute.DeviceBuffer;
import dev.gpucompute.ElementType;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuEvent;
import dev.gpucompute.GpuException;
import dev.gpucompute.GpuLauncher;
import dev.gpucompute.GpuStream;
import dev.gpucompute.HostArray;
import dev.gpucompute.Kernel;
import dev.gpucompute.PoolExhaustedException;
import dev.gpucompute.PoolTooSmallException;
import dev.gpucompute.StagingCounter;
import dev.gpucompute.StreamLease;
import dev.gpucompute.StreamPool;
import dev.gpucompute.StreamPool.PoolStats;
import dev.gpucompute.StreamPriority;
import dev.gpucompute.contract.ContractKernels;
import dev.gpucompute.contract.GpuContractFixture;
import dev.gpucompute.settings.KernelTiming;

/**
 * The stream pool and the context's end on every backend (docs/runtime.md, "Semantics"): the pool is
 * bounded and times out, reuses its streams, hands a released stream to a waiting thread, never gives
 * one stream to two leases, leases groups all or nothing without concurrent groups starving each
 * other, takes a lease closed twice or from many threads back once, and reports a lease held past the
 * leak threshold; close drains the work in flight and then destroys everything (stale handles raise,
 * closing them is harmless), drain stops new leases but lets held ones finish, and handles are never
 * routed to another context. A subclass supplies the backend through {@link #builder()}; the context
 * and helpers come from {@link GpuContractFixture}.
 */
public abstract class PoolAndCloseContractSuite extends GpuContractFixture {

	// ---- pool ------------------------------------------------------------------------------

	@Test
	void poolIsBoundedAndTimesOut() {
		List<StreamLease> leases = new ArrayList<>();
		try {
			for (int i = 0; i < 8; i++) {
				leases.add(this.pool.acquire(Duration.ZERO));
			}
			PoolStats full = this.pool.stats();
			assertThat(full.size()).isEqualTo(8);
			assertThat(full.active()).isEqualTo(8);
			assertThat(full.created()).isEqualTo(8);
			assertThatThrownBy(() -> this.pool.acquire(Duration.ofMillis(50)))
				.isInstanceOf(PoolExhaustedException.class)
				.hasMessageContaining("no stream free after 50 ms")
				.hasMessageContaining("max 8");
			assertThat(this.pool.stats().timeouts()).isEqualTo(1);
			assertThat(this.pool.stats().highWaterMark()).isEqualTo(8);
		}
		finally {
			leases.forEach(StreamLease::close);
		}
		assertNothingLeaked();
	}

	@Test
	void poolReusesStreams() {
		String first;
		try (StreamLease lease = this.pool.acquire()) {
			first = lease.stream().name();
		}
		try (StreamLease lease = this.pool.acquire()) {
			assertThat(lease.stream().name()).as("last returned, first handed out").isEqualTo(first);
		}
		for (int i = 0; i < 100; i++) {
			try (StreamLease lease = this.pool.acquire()) {
				assertThat(lease.stream().kind()).isEqualTo(GpuStream.Kind.POOLED);
			}
		}
		PoolStats stats = this.pool.stats();
		assertThat(stats.created()).isEqualTo(2);
		assertThat(stats.acquisitions()).isEqualTo(102);
		assertNothingLeaked();
	}

	@Test
	void waiterGetsTheStreamReleasedByAnotherThread() throws Exception {
		List<StreamLease> leases = new ArrayList<>();
		for (int i = 0; i < 8; i++) {
			leases.add(this.pool.acquire());
		}
		ExecutorService executor = Executors.newSingleThreadExecutor();
		try {
			Future<String> waiter = executor.submit(() -> {
				try (StreamLease lease = this.pool.acquire(Duration.ofSeconds(20))) {
					return lease.stream().name();
				}
			});
			while (this.pool.stats().pending() == 0) {
				Thread.onSpinWait();
			}
			String released = leases.get(3).stream().name();
			leases.get(3).close();
			assertThat(waiter.get(20, TimeUnit.SECONDS)).isEqualTo(released);
		}
		finally {
			executor.shutdownNow();
			leases.forEach(StreamLease::close);
		}
		assertNothingLeaked();
	}

	@Test
	void leasesAreExclusiveUnderContention() throws Exception {
		int threads = 16;
		Map<String, Thread> holders = new ConcurrentHashMap<>();
		AtomicInteger violations = new AtomicInteger();
		CountDownLatch start = new CountDownLatch(1);
		ExecutorService executor = Executors.newFixedThreadPool(threads);
		try {
			List<Future<?>> done = new ArrayList<>();
			for (int t = 0; t < threads; t++) {
				done.add(executor.submit(() -> {
					start.await();
					for (int i = 0; i < 300; i++) {
						try (StreamLease lease = this.pool.acquire(Duration.ofSeconds(30))) {
							String name = lease.stream().name();
							if (holders.putIfAbsent(name, Thread.currentThread()) != null) {
								violations.incrementAndGet();
							}
							Thread.yield();
							holders.remove(name);
						}
					}
					return null;
				}));
			}
			start.countDown();
			for (Future<?> future : done) {
				future.get(120, TimeUnit.SECONDS);
			}
		}
		finally {
			executor.shutdownNow();
		}
		assertThat(violations).as("a stream held by two leases at once").hasValue(0);
		PoolStats stats = this.pool.stats();
		assertThat(stats.size()).isLessThanOrEqualTo(8);
		assertThat(stats.acquisitions()).isEqualTo(threads * 300L);
		assertThat(stats.highWaterMark()).isLessThanOrEqualTo(8);
		assertNothingLeaked();
	}

	@Test
	void groupAcquisitionTakesAllOrNothing() throws Exception {
		List<StreamLease> held = new ArrayList<>();
		for (int i = 0; i < 6; i++) {
			held.add(this.pool.acquire());
		}
		assertThatThrownBy(() -> this.pool.acquireAll(StreamPriority.NORMAL, 3, Duration.ofMillis(50)))
			.isInstanceOf(PoolExhaustedException.class);
		assertThat(this.pool.stats().active()).as("a failed group takes nothing").isEqualTo(6);
		assertThatThrownBy(() -> this.pool.acquireAll(StreamPriority.NORMAL, 9, Duration.ZERO))
			.isInstanceOf(PoolTooSmallException.class).hasMessageContaining("never holds more than 8");
		assertThat(this.pool.stats().active()).as("a group the pool can never lease takes nothing").isEqualTo(6);
		ExecutorService executor = Executors.newSingleThreadExecutor();
		try {
			Future<Integer> group = executor.submit(() -> {
				List<StreamLease> leases = this.pool.acquireAll(StreamPriority.NORMAL, 3, Duration.ofSeconds(20));
				int distinct = (int) leases.stream().map((lease) -> lease.stream().name()).distinct().count();
				leases.forEach(StreamLease::close);
				return distinct;
			});
			while (this.pool.stats().pending() == 0) {
				Thread.onSpinWait();
			}
			held.remove(0).close();
			assertThat(group.get(20, TimeUnit.SECONDS)).isEqualTo(3);
		}
		finally {
			executor.shutdownNow();
			held.forEach(StreamLease::close);
		}
		assertNothingLeaked();
	}

	@Test
	void concurrentParallelGroupsDoNotStarveEachOther() throws Exception {
		// Groups of 5 on a pool of 8: leasing stream by stream could leave two groups holding 4 each,
		// both waiting for the other's streams until they time out.
		try (GpuContext small = builder().poolSize(0).maxSize(8).acquireTimeout(Duration.ofSeconds(5))
			.kernelTiming(KernelTiming.OFF).open()) {
			GpuLauncher groups = small.launcher();
			int threads = 4;
			CyclicBarrier together = new CyclicBarrier(threads);
			ExecutorService executor = Executors.newFixedThreadPool(threads);
			try {
				List<Future<?>> done = new ArrayList<>();
				for (int t = 0; t < threads; t++) {
					done.add(executor.submit(() -> {
						for (int round = 0; round < 20; round++) {
							together.await(30, TimeUnit.SECONDS);
							List<Consumer<GpuStream>> branches = new ArrayList<>();
							for (int b = 0; b < 5; b++) {
								branches.add((stream) -> Thread.yield());
							}
							groups.parallel(branches);
						}
						return null;
					}));
				}
				for (Future<?> future : done) {
					future.get(120, TimeUnit.SECONDS);
				}
			}
			finally {
				executor.shutdownNow();
			}
			assertThat(small.streams().stats().timeouts()).isZero();
			assertThat(small.streams().stats().active()).isZero();
		}
	}

	@Test
	void closingALeaseTwiceReturnsTheStreamOnce() {
		StreamLease lease = this.pool.acquire();
		lease.close();
		lease.close();
		PoolStats stats = this.pool.stats();
		assertThat(stats.idle()).isEqualTo(stats.size());
		assertThat(stats.active()).isZero();
		try (StreamLease a = this.pool.acquire(); StreamLease b = this.pool.acquire()) {
			assertThat(a.stream().name()).isNotEqualTo(b.stream().name());
		}
		assertThatThrownBy(() -> lease.stream().synchronize()).isInstanceOf(GpuException.class)
			.hasMessageContaining("after its lease was closed");
		assertNothingLeaked();
	}

	@Test
	void closingALeaseFromManyThreadsAtOnceReturnsTheStreamOnce() throws Exception {
		int threads = 8;
		ExecutorService executor = Executors.newFixedThreadPool(threads);
		try {
			for (int round = 0; round < 200; round++) {
				StreamLease lease = this.pool.acquire();
				CyclicBarrier start = new CyclicBarrier(threads);
				List<Future<?>> closes = new ArrayList<>();
				for (int t = 0; t < threads; t++) {
					closes.add(executor.submit(() -> {
						start.await();
						lease.close();
						return null;
					}));
				}
				for (Future<?> close : closes) {
					close.get(10, TimeUnit.SECONDS);
				}
				assertThat(lease.isClosed()).isTrue();
				PoolStats stats = this.pool.stats();
				assertThat(stats.active()).as("round %d", round).isZero();
				assertThat(stats.idle()).as("round %d", round).isEqualTo(stats.size());
			}
		}
		finally {
			executor.shutdownNow();
		}
		PoolStats stats = this.pool.stats();
		assertThat(stats.streams().stream().mapToLong(PoolStats.StreamStats::leases).sum())
			.isEqualTo(stats.acquisitions());
		assertNothingLeaked();
	}

	@Test
	void priorityStreamsAreLeasedWithinTheSameBound() {
		try (StreamLease high = this.pool.acquire(StreamPriority.HIGH); StreamLease normal = this.pool.acquire()) {
			assertThat(high.stream().priority()).isEqualTo(StreamPriority.HIGH);
			assertThat(normal.stream().priority()).isEqualTo(StreamPriority.NORMAL);
		}
		assertThat(this.pool.stats().size()).isLessThanOrEqualTo(8);
		assertNothingLeaked();
	}

	@Test
	void leakDetectionReportsALeaseHeldPastTheThreshold() throws Exception {
		try (GpuContext watched = builder().leakDetectionThreshold(Duration.ofMillis(50))
			.kernelTiming(KernelTiming.OFF)
			.open()) {
			try (StreamLease lease = watched.streams().acquire()) {
				long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
				while (watched.streams().stats().leaksDetected() == 0 && System.nanoTime() < deadline) {
					Thread.sleep(10);
				}
				assertThat(watched.streams().stats().leaksDetected()).isEqualTo(1);
			}
			try (StreamLease quick = watched.streams().acquire()) {
				assertThat(quick.isClosed()).isFalse();
			}
			Thread.sleep(150);
			assertThat(watched.streams().stats().leaksDetected()).as("a lease returned in time is not reported")
				.isEqualTo(1);
		}
	}

	// ---- shutdown and use after close ---------------------------------------------------------

	@Test
	void closeDrainsWorkInFlightThenDestroysEverything() {
		Kernel slow = kernel(ContractKernels.SLEEP_THEN_SET);
		List<java.util.concurrent.CompletableFuture<Void>> completions = new ArrayList<>();
		StreamLease held = this.pool.acquire();
		GpuEvent event = this.context.events().create();
		DeviceBuffer cells = zeros(4);
		held.stream().waitFor(cells.stream());
		for (int i = 0; i < 3; i++) {
			try (StreamLease lease = this.pool.acquire()) {
				lease.stream().waitFor(cells.stream());
				this.launcher.launch(lease.stream(), slow, ONE, cells, i, i + 1, 300);
				completions.add(lease.stream().completion());
			}
		}
		this.launcher.launch(held.stream(), slow, ONE, cells, 3, 4, 300);
		held.stream().record(event);
		completions.add(held.stream().completion());

		this.context.close();

		for (var completion : completions) {
			assertThat(completion).as("work in flight finished before close returned").isCompleted()
				.isNotCompletedExceptionally();
		}
		PoolStats stats = this.pool.stats();
		assertThat(stats.size()).isZero();
		assertThat(stats.destroyed()).isEqualTo(stats.created());
		assertThat(this.context.events().live()).isZero();
		assertThat(this.context.isHealthy()).isFalse();
		assertThat(this.context.healthProblem()).contains("closed");

		// Stale handles: use raises, close is harmless.
		assertThatThrownBy(() -> held.stream().synchronize()).isInstanceOf(ContextClosedException.class);
		assertThatThrownBy(() -> event.record(held.stream())).isInstanceOf(ContextClosedException.class);
		assertThatThrownBy(() -> cells.download(HostArray.of(new int[4]), held.stream())).isInstanceOf(ContextClosedException.class);
		assertThatThrownBy(() -> this.launcher.launch(slow, ONE, cells, 0, 1, 1))
			.isInstanceOf(ContextClosedException.class);
		assertThatThrownBy(() -> this.pool.acquire()).isInstanceOf(ContextClosedException.class);
		assertThatThrownBy(() -> this.context.events().create()).isInstanceOf(ContextClosedException.class);
		assertThatCode(() -> {
			held.close();
			event.close();
			cells.close();
			this.context.close();
		}).doesNotThrowAnyException();
	}

	@Test
	void drainStopsNewLeasesButLetsHeldOnesFinish() {
		Kernel slow = kernel(ContractKernels.SLEEP_THEN_SET);
		try (StreamLease held = this.pool.acquire(); DeviceBuffer cell = zeros(1)) {
			held.stream().waitFor(cell.stream());
			this.launcher.launch(held.stream(), slow, ONE, cell, 0, 3, 200);
			assertThat(this.context.drain(Duration.ofSeconds(30))).isTrue();
			assertThat(held.stream().isIdle()).as("drain waited for the work in flight").isTrue();
			assertThatThrownBy(() -> this.pool.acquire()).isInstanceOf(ContextClosedException.class);
			this.launcher.launch(held.stream(), slow, ONE, cell, 0, 4, 1);
			assertThat(read(cell, 1, held.stream())).containsExactly(4);
		}
		this.context.close();
		assertThat(this.pool.stats().size()).isZero();
		assertThat(this.context.events().live()).isZero();
	}

	@Test
	void anIdleDeviceIsIdleWithNoTimeLeft() {
		try (DeviceBuffer cells = zeros(4)) {
			assertThat(read(cells, 4, cells.stream())).as("a copy that completed").containsExactly(0, 0, 0, 0);
		}
		// Spring drains on stop and then closes with what is left of the timeout, often nothing. The first
		// drain also lets the copy's completion callback return (it may still be returning for a few
		// microseconds once the future completed); after it nothing runs, whatever the deadline.
		assertThat(this.context.drain(Duration.ofSeconds(30))).isTrue();
		assertThat(this.context.drain(Duration.ZERO)).as("drain with no time left on an idle device").isTrue();
	}

	@Test
	void aCloseWithItsDrainTimeSpentStillReleasesAnIdleDevice() {
		StagingCounter staging = new StagingCounter();
		GpuContext spent = staging.open(builder().drainTimeout(Duration.ZERO).kernelTiming(KernelTiming.OFF));
		try {
			try (DeviceBuffer cells = spent.launcher().allocate(16, ElementType.BYTE)) {
				cells.upload(HostArray.of(new int[] { 1, 2, 3, 4 }), cells.stream()).join();
				int[] back = new int[4];
				cells.download(HostArray.of(back), cells.stream()).join();
				assertThat(back).containsExactly(1, 2, 3, 4);
			}
			// As in the test above: Spring's first phase; the close that follows has no time left.
			assertThat(spent.drain(Duration.ofSeconds(30))).isTrue();
		}
		finally {
			spent.close();
		}
		// Close with a drain timeout of 0 on an idle device: nothing was abandoned, so the staging blocks
		// (page-locked on CUDA) are freed rather than left to the process under work that may still run.
		assertThat(staging.allocated()).as("staging blocks the copies took").isPositive();
		assertThat(staging.unfreed()).as("staging blocks left to the process").isZero();
	}

	@Test
	void closeWaitsForWorkOnAStreamThePoolReplacedWhileTheWorkRan() {
		StagingCounter staging = new StagingCounter();
		GpuContext small = staging.open(builder().poolSize(0).maxSize(1).kernelTiming(KernelTiming.OFF));
		int[] host = new int[4];
		CompletableFuture<Void> download;
		DeviceBuffer cells = null;
		try {
			Kernel slow = small.launcher().load(ContractKernels.SLEEP_THEN_SET);
			cells = small.launcher().allocate(16, ElementType.BYTE);
			cells.fill((byte) 0, cells.stream());
			StreamPool pool = small.streams();
			try (StreamLease lease = pool.acquire(StreamPriority.NORMAL)) {
				lease.stream().waitFor(cells.stream());
				small.launcher().launch(lease.stream(), slow, ONE, cells, 0, 7, 500);
				download = cells.download(HostArray.of(host), lease.stream());
			}
			// The lease went back with its kernel and download in flight: the pool counts the stream idle.
			// A caller of the other priority at the pool's maximum gets it replaced.
			try (StreamLease high = pool.acquire(StreamPriority.HIGH)) {
				assertThat(pool.stats().destroyed()).as("streams the pool replaced").isEqualTo(1);
			}
		}
		finally {
			small.close();
		}
		assertThat(download).as("download on the replaced stream, after close").isCompleted()
			.isNotCompletedExceptionally();
		assertThat(host).containsExactly(7, 0, 0, 0);
		assertThat(staging.allocated()).as("staging blocks the copies took").isPositive();
		assertThat(staging.unfreed()).as("staging blocks left to the process").isZero();
		cells.close();
	}

	@Test
	void handlesAreNeverRoutedToAnotherContext() {
		try (GpuContext other = builder().kernelTiming(KernelTiming.OFF).open();
				StreamLease foreign = other.streams().acquire();
				DeviceBuffer foreignBuffer = other.launcher().allocate(16, ElementType.BYTE)) {
			Kernel append = kernel(ContractKernels.APPEND);
			assertThatThrownBy(() -> this.launcher.launch(foreign.stream(), append, ONE, foreignBuffer, 1))
				.isInstanceOf(ContextMismatchException.class).hasMessageContaining("another GPU context");
			try (DeviceBuffer mine = zeros(4)) {
				assertThatThrownBy(() -> this.launcher.launch(append, ONE, foreignBuffer, 1))
					.isInstanceOf(ContextMismatchException.class).hasMessageContaining("another GPU context");
				assertThatThrownBy(() -> mine.download(HostArray.of(new int[4]), foreign.stream()))
					.isInstanceOf(ContextMismatchException.class);
			}
		}
		assertNothingLeaked();
	}

}
