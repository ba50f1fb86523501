package dev.gpucompute;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import org.junit.jupiter.api.Test;

import dev.gpucompute.StreamPool.LeaseInfo;
import dev.gpucompute.settings.KernelTiming;

/**
 * {@link StreamPool#leases()} lists what holds the pool, oldest first, with where each lease was
 * acquired; {@link StreamPool#stallReason()} tells a pool whose leases do not come back from a busy
 * one. Pool bookkeeping only, the same on every backend.
 */
class StreamPoolStallTests {

	private static GpuContext open(Duration leakThreshold) {
		return open(leakThreshold, 2, Duration.ofMillis(20));
	}

	private static GpuContext open(Duration leakThreshold, int maxSize, Duration acquireTimeout) {
		return GpuContext.builder()
			.backend(Backend.CPU)
			.cpuThreads(1)
			.poolSize(0)
			.maxSize(maxSize)
			.acquireTimeout(acquireTimeout)
			.kernelTiming(KernelTiming.OFF)
			.leakDetectionThreshold(leakThreshold)
			.open();
	}

	@Test
	void leasesAreListedOldestFirstWithTheThreadAndTheSiteThatAcquiredThem() throws Exception {
		try (GpuContext context = open(Duration.ofHours(1))) {
			StreamPool pool = context.streams();
			try (StreamLease first = acquireHere(pool)) {
				Thread.sleep(5);
				try (StreamLease second = pool.acquire()) {
					List<LeaseInfo> leases = pool.leases();
					assertThat(leases).extracting(LeaseInfo::stream)
						.containsExactly(first.stream().name(), second.stream().name());
					assertThat(leases.get(0).held()).isGreaterThan(leases.get(1).held());
					assertThat(leases.get(0).thread()).isEqualTo(Thread.currentThread().getName());
					assertThat(leases.get(0).priority()).isEqualTo(StreamPriority.NORMAL);
					// The site starts at the pool's caller: the runtime's own frames are left out.
					assertThat(leases.get(0).site().get(0).getMethodName()).isEqualTo("acquireHere");
					assertThat(leases.get(1).site().get(0).getMethodName())
						.isEqualTo("leasesAreListedOldestFirstWithTheThreadAndTheSiteThatAcquiredThem");
				}
				assertThat(pool.leases()).extracting(LeaseInfo::stream).containsExactly(first.stream().name());
			}
			assertThat(pool.leases()).isEmpty();
		}
	}

	@Test
	void withoutLeakDetectionLeasesHaveNoSiteAndThePoolIsNeverJudgedStalled() throws Exception {
		try (GpuContext context = open(Duration.ZERO)) {
			StreamPool pool = context.streams();
			try (StreamLease a = pool.acquire(); StreamLease b = pool.acquire()) {
				assertThatThrownBy(pool::acquire).isInstanceOf(PoolExhaustedException.class);
				assertThat(pool.leases()).hasSize(2).allSatisfy((lease) -> assertThat(lease.site()).isEmpty());
				assertThat(pool.stallReason()).isNull();
				assertThat(pool.leakDetectionThreshold()).isZero();
			}
		}
	}

	@Test
	void aPoolWhoseLeasesAreAllHeldPastTheThresholdWhileCallersTimeOutIsStalledUntilOneComesBack()
			throws Exception {
		// Margins of hundreds of milliseconds: the machines that run this are often loaded.
		try (GpuContext context = open(Duration.ofMillis(500))) {
			StreamPool pool = context.streams();
			StreamLease a = pool.acquire();
			StreamLease b = pool.acquire();
			assertThat(pool.stallReason()).as("all leased, but young").isNull();
			Thread.sleep(600);
			assertThat(pool.stallReason()).as("all leased and old, but nobody waits").isNull();
			assertThatThrownBy(pool::acquire).isInstanceOf(PoolExhaustedException.class);
			assertThat(pool.stallReason()).startsWith("All 2 pooled streams have been leased for more than 500 ms")
				.contains("the last acquisition timed out")
				.contains("leases are not being returned");
			a.close();
			assertThat(pool.stallReason()).as("one stream is free again").isNull();
			try (StreamLease c = pool.acquire()) {
				assertThat(pool.stallReason()).as("the most recent lease is young").isNull();
			}
			b.close();
			// Long after the last timeout, with nobody waiting, the old leases alone are not a stall.
			StreamLease d = pool.acquire();
			StreamLease e = pool.acquire();
			Thread.sleep(600);
			assertThat(pool.stallReason()).isNull();
			d.close();
			e.close();
		}
	}

	@Test
	void aCallerWaitingNowIsEnoughToCallOldLeasesAStall() throws Exception {
		try (GpuContext context = open(Duration.ofMillis(200), 1, Duration.ofSeconds(30))) {
			StreamPool pool = context.streams();
			StreamLease held = pool.acquire();
			Thread.sleep(300);
			CountDownLatch waiting = new CountDownLatch(1);
			Thread waiter = new Thread(() -> {
				waiting.countDown();
				try (StreamLease lease = pool.acquire(Duration.ofSeconds(10))) {
					// got it once the holder let go
				}
			});
			waiter.start();
			waiting.await();
			long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
			while (pool.stats().pending() == 0 && System.nanoTime() < deadline) {
				Thread.sleep(1);
			}
			assertThat(pool.stallReason()).contains("1 waiting now");
			held.close();
			waiter.join(5000);
			assertThat(waiter.isAlive()).isFalse();
			assertThat(pool.stallReason()).isNull();
		}
	}

	@Test
	void aBusyPoolWhoseLeasesComeAndGoIsNeverStalled() throws Exception {
		try (GpuContext context = open(Duration.ofMillis(500), 1, Duration.ofSeconds(30))) {
			StreamPool pool = context.streams();
			AtomicBoolean stop = new AtomicBoolean();
			Runnable worker = () -> {
				while (!stop.get()) {
					try (StreamLease lease = pool.acquire(Duration.ofSeconds(5))) {
						Thread.sleep(5);
					}
					catch (InterruptedException ex) {
						Thread.currentThread().interrupt();
						return;
					}
				}
			};
			Thread one = new Thread(worker);
			Thread two = new Thread(worker);
			one.start();
			two.start();
			// Three thresholds long: a stall would have been seen, while 5 ms holds stay far below 500 ms.
			long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(1500);
			int checks = 0;
			while (System.nanoTime() < end) {
				assertThat(pool.stallReason()).isNull();
				checks++;
				Thread.sleep(2);
			}
			stop.set(true);
			one.join();
			two.join();
			assertThat(checks).isGreaterThan(10);
			assertThat(pool.stats().acquisitions()).isGreaterThan(10);
		}
	}

	private static StreamLease acquireHere(StreamPool pool) {
		return pool.acquire();
	}

}
