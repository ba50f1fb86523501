package dev.gpucompute.contract.stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.lang.reflect.Method;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import dev.gpucompute.DeviceBuffer;
import dev.gpucompute.ElementType;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuException;
import dev.gpucompute.GpuLauncher;
import dev.gpucompute.GpuStream;
import dev.gpucompute.HostArray;
import dev.gpucompute.Kernel;
import dev.gpucompute.StreamLease;
import dev.gpucompute.StreamPool.StreamLeases;
import dev.gpucompute.StreamScope;
import dev.gpucompute.contract.ContractKernels;
import dev.gpucompute.contract.GpuContractFixture;
import dev.gpucompute.settings.KernelTiming;

/**
 * The runtime on virtual threads (docs/runtime.md, "Virtual threads"): the current stream, a stream
 * scope and a thread's default stream belong to the virtual thread, not to the carrier thread it runs
 * on, so they hold across a blocking call (after which the thread may resume on another carrier) and
 * virtual threads that share carriers never see each other's; a virtual thread that waits for a lease
 * leaves its carrier to others; many virtual threads share a small pool. Runs where the JVM has
 * virtual threads (Java 21+); aborted, with the reason, before. The code is compiled for Java 17, so
 * the virtual-thread executor is looked up reflectively.
 */
public abstract class VirtualThreadContractSuite extends GpuContractFixture {

	/** More virtual threads than the carriers of any machine with up to 32 cores, so that they share carriers. */
	private static final int MANY = 64;

	private ExecutorService virtualThreads;

	@BeforeEach
	void virtualThreads() throws Exception {
		Method factory;
		try {
			factory = Executors.class.getMethod("newVirtualThreadPerTaskExecutor");
		}
		catch (NoSuchMethodException ex) {
			Assumptions.abort("no virtual threads before Java 21 (this JVM: Java " + Runtime.version().feature() + ")");
			return;
		}
		this.virtualThreads = (ExecutorService) factory.invoke(null);
	}

	@AfterEach
	void stopVirtualThreads() throws InterruptedException {
		if (this.virtualThreads != null) {
			this.virtualThreads.shutdownNow();
			assertThat(this.virtualThreads.awaitTermination(RENDEZVOUS_TIMEOUT_MS, TimeUnit.MILLISECONDS))
				.as("virtual threads of the test ended").isTrue();
		}
	}

	private <T> T onVirtualThread(Callable<T> action) throws Exception {
		return this.virtualThreads.submit(() -> {
			assertThat(isVirtual(Thread.currentThread())).as("runs on a virtual thread").isTrue();
			return action.call();
		}).get(RENDEZVOUS_TIMEOUT_MS, TimeUnit.MILLISECONDS);
	}

	private static boolean isVirtual(Thread thread) throws ReflectiveOperationException {
		return (boolean) Thread.class.getMethod("isVirtual").invoke(thread);
	}

	@Test
	void aScopeOnAVirtualThreadHoldsAcrossBlockingAndIsRestoredWhenClosed() throws Exception {
		Kernel slow = kernel(ContractKernels.SLEEP_THEN_SET);
		int value = onVirtualThread(() -> {
			GpuStream before = this.launcher.currentStream();
			try (StreamLease lease = this.pool.acquire(); StreamScope scope = this.launcher.useStream(lease.stream());
					DeviceBuffer cell = this.launcher.allocate(1, ElementType.INT)) {
				assertThat(this.launcher.currentStream()).isSameAs(lease.stream());
				this.launcher.launch(slow, ONE, cell, 0, 7, 50);
				// Blocking unmounts a virtual thread; it may resume on another carrier.
				Thread.sleep(20);
				assertThat(this.launcher.currentStream()).as("after blocking").isSameAs(lease.stream());
				int[] host = new int[1];
				cell.download(HostArray.of(host)).join(); // on the scope's stream: after the kernel
				assertThat(this.launcher.currentStream()).as("after waiting for a future").isSameAs(lease.stream());
				scope.close();
				assertThat(this.launcher.currentStream()).as("after the scope").isSameAs(before);
				return host[0];
			}
		});
		assertThat(value).isEqualTo(7);
		assertNothingLeaked();
	}

	@Test
	void virtualThreadsThatShareCarriersKeepTheirOwnScopes() throws Exception {
		try (GpuContext wide = builder().poolSize(1).maxSize(MANY).acquireTimeout(Duration.ofSeconds(10))
			.kernelTiming(KernelTiming.OFF)
			.open()) {
			GpuLauncher launcher = wide.launcher();
			// Every thread holds its scope while all the others hold theirs: the threads are all mounted,
			// parked and resumed in between, so carriers run several of them.
			CyclicBarrier allScoped = new CyclicBarrier(MANY);
			List<Future<Boolean>> results = new ArrayList<>();
			for (int i = 0; i < MANY; i++) {
				results.add(this.virtualThreads.submit(() -> {
					GpuStream own = launcher.currentStream();
					try (StreamLease lease = wide.streams().acquire(); StreamScope scope = launcher.useStream(lease.stream())) {
						allScoped.await(RENDEZVOUS_TIMEOUT_MS, TimeUnit.MILLISECONDS);
						boolean scoped = launcher.currentStream() == lease.stream();
						allScoped.await(RENDEZVOUS_TIMEOUT_MS, TimeUnit.MILLISECONDS);
						scope.close();
						return scoped && launcher.currentStream() == own;
					}
				}));
			}
			for (Future<Boolean> result : results) {
				assertThat(result.get(RENDEZVOUS_TIMEOUT_MS, TimeUnit.MILLISECONDS)).as("own scope, then own default stream")
					.isTrue();
			}
			assertThat(wide.streams().stats().active()).isZero();
		}
	}

	@Test
	void eachVirtualThreadHasADefaultStreamOfItsOwnThatKeepsItsOrderAcrossBlocking() throws Exception {
		Kernel slow = kernel(ContractKernels.SLEEP_THEN_SET);
		GpuStream first = onVirtualThread(() -> {
			GpuStream own = this.context.defaultStream();
			assertThat(own.kind()).isEqualTo(GpuStream.Kind.DEFAULT_PER_THREAD);
			assertThat(this.launcher.currentStream()).isSameAs(own);
			try (DeviceBuffer cell = this.launcher.allocate(1, ElementType.INT)) {
				for (int round = 1; round <= 4; round++) {
					this.launcher.launch(slow, ONE, cell, 0, round, 50);
					Thread.sleep(5); // unmounts; the work stays on this thread's default stream
					int[] host = new int[1];
					cell.download(HostArray.of(host)).join();
					assertThat(host[0]).as("round %d: the download after the kernel that wrote it", round).isEqualTo(round);
				}
				own.synchronize();
				assertThat(own.isIdle()).isTrue();
			}
			return own;
		});
		GpuStream second = onVirtualThread(() -> {
			GpuStream own = this.context.defaultStream();
			assertThatThrownBy(first::synchronize).as("another virtual thread's default stream")
				.isInstanceOf(GpuException.class)
				.hasMessageContaining("per-thread default stream");
			return own;
		});
		assertThat(second).isNotSameAs(first);
		assertNothingLeaked();
	}

	@Test
	void messagesAndReportsNameAVirtualThreadByItsId() throws Exception {
		// A virtual thread has an empty name: "the default stream of thread ''" named nothing.
		Thread[] owner = new Thread[1];
		GpuStream first = onVirtualThread(() -> {
			owner[0] = Thread.currentThread();
			return this.context.defaultStream();
		});
		String ownerName = "virtual thread #" + id(owner[0]);
		String[] seen = onVirtualThread(() -> {
			String self = "virtual thread #" + id(Thread.currentThread());
			Throwable misuse = org.assertj.core.api.Assertions.catchThrowable(first::synchronize);
			try (StreamLease lease = this.pool.acquire()) {
				return new String[] { self, misuse.getMessage(), this.pool.leases().get(0).thread() };
			}
		});
		assertThat(seen[1]).as("using another virtual thread's default stream")
			.contains("per-thread default stream of " + ownerName)
			.contains("cannot be used from " + seen[0])
			.doesNotContain("''");
		assertThat(seen[2]).as("the thread a lease report names").isEqualTo(seen[0]);
		assertNothingLeaked();
	}

	@SuppressWarnings("deprecation") // Thread.threadId() is Java 19+
	private static long id(Thread thread) {
		return thread.getId();
	}

	@Test
	void manyVirtualThreadsShareASmallPool() throws Exception {
		Kernel append = kernel(ContractKernels.APPEND);
		int threads = 500;
		long acquisitionsBefore = this.pool.stats().acquisitions();
		List<Future<int[]>> results = new ArrayList<>();
		for (int i = 0; i < threads; i++) {
			int id = i;
			results.add(this.virtualThreads.submit(() -> {
				try (StreamLease lease = this.pool.acquire(); StreamScope scope = this.launcher.useStream(lease.stream());
						DeviceBuffer log = zeros(2)) {
					lease.stream().waitFor(log.stream());
					this.launcher.launch(append, ONE, log, id);
					return read(log, 2, lease.stream());
				}
			}));
		}
		for (int i = 0; i < threads; i++) {
			assertThat(results.get(i).get(RENDEZVOUS_TIMEOUT_MS, TimeUnit.MILLISECONDS)).as("thread %d", i)
				.containsExactly(1, i);
		}
		assertThat(this.pool.stats().acquisitions() - acquisitionsBefore).isEqualTo(threads);
		assertThat(this.pool.stats().timeouts()).isZero();
		assertThat(this.pool.stats().maxSize()).isLessThan(threads);
		assertNothingLeaked();
	}

	@Test
	void aVirtualThreadWaitingForALeaseLeavesItsCarrierToOthers() throws Exception {
		// More waiters than the virtual-thread scheduler ever has carriers (256 at most by default): if a
		// wait for a lease held its carrier, the thread started after them would never run.
		int waiters = 300;
		CountDownLatch waiting = new CountDownLatch(waiters);
		List<Future<Boolean>> results = new ArrayList<>();
		try (StreamLeases all = this.pool.acquireAll(this.pool.stats().maxSize())) {
			for (int i = 0; i < waiters; i++) {
				results.add(this.virtualThreads.submit(() -> {
					waiting.countDown();
					try (StreamLease lease = this.pool.acquire()) {
						return lease.stream().kind() == GpuStream.Kind.POOLED;
					}
				}));
			}
			assertThat(waiting.await(RENDEZVOUS_TIMEOUT_MS, TimeUnit.MILLISECONDS)).as("all waiters started").isTrue();
			long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(RENDEZVOUS_TIMEOUT_MS);
			while (this.pool.stats().pending() < waiters && System.nanoTime() < deadline) {
				Thread.sleep(5);
			}
			assertThat(this.pool.stats().pending()).as("threads waiting for a lease").isEqualTo(waiters);
			CountDownLatch ran = new CountDownLatch(1);
			this.virtualThreads.submit(ran::countDown);
			assertThat(ran.await(RENDEZVOUS_TIMEOUT_MS, TimeUnit.MILLISECONDS))
				.as("a virtual thread started while %d others wait for a lease runs", waiters)
				.isTrue();
		}
		for (Future<Boolean> result : results) {
			assertThat(result.get(RENDEZVOUS_TIMEOUT_MS, TimeUnit.MILLISECONDS)).isTrue();
		}
		assertThat(this.pool.stats().timeouts()).isZero();
		assertNothingLeaked();
	}

}
