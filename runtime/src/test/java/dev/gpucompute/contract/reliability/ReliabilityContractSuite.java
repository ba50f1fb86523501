package dev.gpucompute.contract.reliability;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.lang.management.BufferPoolMXBean;
import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import dev.gpucompute.ContextClosedException;
import dev.gpucompute.CopyFaultInjection;
import dev.gpucompute.DeviceBuffer;
import dev.gpucompute.Dim3;
import dev.gpucompute.ElementType;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuContextBuilder;
import dev.gpucompute.GpuException;
import dev.gpucompute.GpuLauncher;
import dev.gpucompute.HostArray;
import dev.gpucompute.HostBuffer;
import dev.gpucompute.Kernel;
import dev.gpucompute.LaunchConfig;
import dev.gpucompute.StreamLease;
import dev.gpucompute.StreamPool.PoolStats;
import dev.gpucompute.StreamScope;
import dev.gpucompute.contract.ContractKernels;
import dev.gpucompute.contract.RuntimeThreads;
import dev.gpucompute.cpu.CpuBackendProvider;
import dev.gpucompute.settings.KernelTiming;

/**
 * Reliability under faults and shutdown, on every backend (docs/runtime.md, "Semantics", items 10 and 12): a
 * failing kernel harms only the work that depends on it, and closing a context never strands a
 * caller. Each test opens its own context, since each needs its own settings and closes it itself.
 */
public abstract class ReliabilityContractSuite {

	private static final LaunchConfig ONE = LaunchConfig.of(Dim3.of(1), Dim3.of(1));

	/** A builder for the backend under test. */
	protected abstract GpuContextBuilder builder();

	/** How long the fault-injection soak runs; about 20 s in CI, longer with -Dgpu.soak.seconds. */
	private static long soakSeconds() {
		return Long.getLong("gpu.soak.seconds", 20);
	}

	/**
	 * 32 threads do the README's round trip (lease, scope, upload, launch, download, join); 1 % of the
	 * launches use a kernel that fails. Every round trip with the failing kernel must fail naming it;
	 * every other round trip must succeed with exact results; every failure is counted once; no
	 * future is left incomplete; nothing is held afterwards.
	 */
	@Test
	void faultInjectionSoakHarmsOnlyTheFailingWork() throws Exception {
		int threads = 32;
		try (GpuContext context = builder().poolSize(8).maxSize(8).acquireTimeout(Duration.ofSeconds(60))
			.kernelTiming(KernelTiming.SAMPLED)
			.open()) {
			GpuLauncher launcher = context.launcher();
			Kernel saxpy = launcher.load(ContractKernels.SAXPY);
			Kernel bounded = launcher.load(ContractKernels.BOUNDED_SAXPY);
			long memoryAtStart = context.memory().usedBytes();
			AtomicLong launches = new AtomicLong();
			AtomicLong failingLaunches = new AtomicLong();
			AtomicLong failuresSeen = new AtomicLong();
			AtomicLong wrongElements = new AtomicLong();
			AtomicLong checkedElements = new AtomicLong();
			AtomicLong misattributed = new AtomicLong();
			AtomicLong unreported = new AtomicLong();
			AtomicLong stranded = new AtomicLong();
			ConcurrentLinkedQueue<String> samples = new ConcurrentLinkedQueue<>();
			long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(soakSeconds());
			ExecutorService pool = Executors.newFixedThreadPool(threads);
			try {
				List<Future<?>> workers = new ArrayList<>();
				for (int t = 0; t < threads; t++) {
					SplittableRandom random = new SplittableRandom(1000 + t);
					workers.add(pool.submit(() -> {
						while (System.nanoTime() < deadline) {
							boolean fail = random.nextInt(100) == 0;
							int n = 64 + random.nextInt(960);
							float a = 1 + random.nextInt(7);
							float[] x = new float[n];
							float[] y = new float[n];
							for (int i = 0; i < n; i++) {
								x[i] = random.nextInt(1000);
								y[i] = random.nextInt(1000);
							}
							launches.incrementAndGet();
							if (fail) {
								failingLaunches.incrementAndGet();
							}
							float[] out = new float[n];
							try (StreamLease lease = context.streams().acquire();
									StreamScope scope = launcher.useStream(lease.stream());
									DeviceBuffer dx = launcher.upload(HostArray.of(x));
									DeviceBuffer dy = launcher.upload(HostArray.of(y))) {
								// The failing kernel runs with blocks of 64 threads, twice its launch bounds.
								launcher.launch(fail ? bounded : saxpy, LaunchConfig.linear(n, 64), n, a, dx, dy);
								dy.download(HostArray.of(out), lease.stream()).get(60, TimeUnit.SECONDS);
								if (fail) {
									unreported.incrementAndGet();
									continue;
								}
								int wrong = 0;
								for (int i = 0; i < n; i++) {
									if (out[i] != a * x[i] + y[i]) {
										wrong++;
									}
								}
								wrongElements.addAndGet(wrong);
								checkedElements.addAndGet(n);
							}
							catch (TimeoutException ex) {
								stranded.incrementAndGet();
							}
							catch (ExecutionException | GpuException ex) {
								Throwable cause = (ex instanceof ExecutionException) ? ex.getCause() : ex;
								if (fail && String.valueOf(cause.getMessage()).contains("bounded_saxpy")) {
									failuresSeen.incrementAndGet();
								}
								else {
									if (misattributed.incrementAndGet() <= 3) {
										samples.add((fail ? "failing launch: " : "correct launch: ") + cause);
									}
								}
							}
							catch (InterruptedException ex) {
								Thread.currentThread().interrupt();
								return;
							}
						}
					}));
				}
				for (Future<?> worker : workers) {
					worker.get(soakSeconds() + 120, TimeUnit.SECONDS);
				}
			}
			finally {
				pool.shutdownNow();
			}
			System.out.printf("fault-injection soak (%s, %d threads, %d s): launches=%d failing=%d failures reported=%d "
					+ "unreported=%d wrong elements=%d of %d checked, misattributed failures=%d, counted errors=%d "
					+ "(saxpy %d), futures stranded=%d, healthy=%s%n", context.backend(), threads, soakSeconds(),
					launches.get(), failingLaunches.get(), failuresSeen.get(), unreported.get(), wrongElements.get(),
					checkedElements.get(), misattributed.get(), bounded.stats().errors(), saxpy.stats().errors(),
					stranded.get(), context.isHealthy());
			assertThat(launches.get()).as("round trips").isGreaterThan(1000);
			assertThat(failingLaunches.get()).as("failing launches").isPositive();
			assertThat(wrongElements.get()).as("wrong elements").isZero();
			assertThat(misattributed.get()).as("failures reported to work that did not depend on them: " + samples)
				.isZero();
			assertThat(stranded.get()).as("downloads that never completed").isZero();
			assertThat(unreported.get()).as("failing round trips that reported no failure").isZero();
			assertThat(failuresSeen.get()).isEqualTo(failingLaunches.get());
			assertThat(bounded.stats().errors()).as("failures counted").isEqualTo(failingLaunches.get());
			assertThat(saxpy.stats().errors()).isZero();
			assertThat(context.isHealthy()).isTrue();
			context.synchronizeDevice();
			PoolStats stats = context.streams().stats();
			assertThat(stats.active()).as("leased streams").isZero();
			assertThat(context.events().inUse()).as("events in use").isZero();
			assertThat(context.memory().usedBytes()).as("device memory").isEqualTo(memoryAtStart);
		}
	}

	/**
	 * A copy that has begun when close starts is let finish: close waits for it (within the drain
	 * timeout) before it waits for the device, so its future completes normally instead of as
	 * abandoned, and no later operation starts (without that wait, four futures were abandoned
	 * under a 30 s drain). The copy is held inside the pipeline, after the context's checks, by a pause.
	 */
	@ParameterizedTest(name = "{0}")
	@ValueSource(strings = { "small", "chunked" })
	void aCopyInProgressWhenCloseBeginsCompletesInsteadOfBeingAbandoned(String size) throws Exception {
		dev.gpucompute.CopyFaultInjection faults = new dev.gpucompute.CopyFaultInjection();
		GpuContext context = faults.open(
				builder().poolSize(1).maxSize(2).drainTimeout(Duration.ofSeconds(30)).copyChunkSize(4096));
		ExecutorService threads = Executors.newFixedThreadPool(2);
		try {
			float[] data = new float[size.equals("small") ? 16 : 4 * 1024];
			java.util.Arrays.fill(data, 3f);
			CountDownLatch reached = new CountDownLatch(1);
			CountDownLatch release = new CountDownLatch(1);
			DeviceBuffer buffer = context.launcher().allocate(data.length, dev.gpucompute.ElementType.FLOAT);
			faults.pauseAt("COPY", size.equals("small") ? 0 : 2, reached, release);
			Future<CompletableFuture<Void>> upload = threads.submit(() -> {
				try (StreamLease lease = context.streams().acquire()) {
					return buffer.upload(HostArray.of(data), lease.stream());
				}
			});
			assertThat(reached.await(10, TimeUnit.SECONDS)).as("the copy reached its pause").isTrue();
			Future<?> closing = threads.submit(context::close);
			long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
			while (!context.isClosed() && System.nanoTime() < until) {
				Thread.sleep(1);
			}
			assertThat(context.isClosed()).as("close has begun").isTrue();
			Thread.sleep(200);
			assertThat(closing.isDone()).as("close waits for the copy in progress").isFalse();
			assertThatThrownBy(() -> context.launcher().allocate(4, dev.gpucompute.ElementType.FLOAT))
				.as("no new work while closing").isInstanceOf(ContextClosedException.class);
			release.countDown();
			CompletableFuture<Void> done = upload.get(10, TimeUnit.SECONDS);
			assertThat(done).as("the copy's future completes normally").succeedsWithin(Duration.ofSeconds(10));
			closing.get(30, TimeUnit.SECONDS);
		}
		finally {
			threads.shutdownNow();
			context.close();
		}
	}

	/**
	 * Work keeps arriving from 8 threads while the context closes with the given drain timeout: every
	 * future handed out completes (normally, or exceptionally saying the work was abandoned at close),
	 * every later call raises {@link ContextClosedException}, and no thread or direct memory of the
	 * context outlives it: also not the staging of chunked copies, nor host buffers closed while
	 * their copies were pending.
	 */
	@ParameterizedTest(name = "drain timeout {0} ms")
	@ValueSource(longs = { 0, 50, 30_000 })
	void closeUnderLoadCompletesEveryFuture(long drainMillis) throws Exception {
		Set<Thread> threadsBefore = RuntimeThreads.snapshot();
		System.gc();
		long directBefore = directMemoryUsed();
		GpuContext context = builder().poolSize(4).maxSize(8).acquireTimeout(Duration.ofSeconds(30))
			.drainTimeout(Duration.ofMillis(drainMillis))
			.copyChunkSize(4096)
			.open();
		GpuLauncher launcher = context.launcher();
		Kernel slow = launcher.load(ContractKernels.SLEEP_THEN_SET);
		Kernel saxpy = launcher.load(ContractKernels.SAXPY);
		ConcurrentLinkedQueue<CompletableFuture<?>> futures = new ConcurrentLinkedQueue<>();
		ConcurrentLinkedQueue<Throwable> unexpected = new ConcurrentLinkedQueue<>();
		AtomicBoolean stop = new AtomicBoolean();
		CountDownLatch started = new CountDownLatch(8);
		ExecutorService pool = Executors.newFixedThreadPool(8);
		List<Future<?>> workers = new ArrayList<>();
		for (int t = 0; t < 8; t++) {
			int id = t;
			workers.add(pool.submit(() -> {
				boolean first = true;
				CompletableFuture<Void> previous = CompletableFuture.completedFuture(null);
				while (!stop.get()) {
					// At most two rounds in flight per thread: a backlog a 30 s drain can finish.
					while (!previous.isDone() && !stop.get()) {
						try {
							previous.get(50, TimeUnit.MILLISECONDS);
						}
						catch (ExecutionException | TimeoutException ex) {
							// its outcome is checked with the other futures below
						}
						catch (InterruptedException ex) {
							Thread.currentThread().interrupt();
							return;
						}
					}
					try (StreamLease lease = context.streams().acquire();
							StreamScope scope = launcher.useStream(lease.stream())) {
						DeviceBuffer cells = launcher.allocate(64, ElementType.BYTE);
						DeviceBuffer x = launcher.upload(HostArray.of(new float[] { 1, 2, 3, 4 }));
						cells.fill((byte) 0, lease.stream());
						// Slow work queued behind itself, so that some is still pending at close.
						for (int i = 0; i < 4; i++) {
							launcher.launch(slow, ONE, cells, i, id + i, 20);
						}
						launcher.launch(saxpy, ONE, 4, 2f, x, x);
						futures.add(cells.download(HostArray.of(new int[16]), lease.stream()));
						futures.add(x.download(HostArray.of(new float[4]), lease.stream()));
						// Copies in chunks (4 of 4 KiB), and a host buffer closed while its upload is pending.
						DeviceBuffer big = launcher.upload(HostArray.of(new float[4096]));
						futures.add(big.download(HostArray.of(new float[4096]), lease.stream()));
						HostBuffer pinned = launcher.allocateHost(4 * 4096);
						futures.add(big.upload(pinned, lease.stream()));
						pinned.close();
						big.close();
						futures.add(lease.stream().completion());
						CompletableFuture<Void> round = launcher.completion();
						futures.add(round);
						previous = round;
						// Closed without waiting, as a request handler that answers asynchronously would.
						cells.close();
						x.close();
					}
					catch (ContextClosedException ex) {
						return; // the context closed under us: the expected end of this worker
					}
					catch (RuntimeException ex) {
						unexpected.add(ex);
						return;
					}
					finally {
						if (first) {
							first = false;
							started.countDown();
						}
					}
				}
			}));
		}
		assertThat(started.await(30, TimeUnit.SECONDS)).isTrue();
		Thread.sleep(200);
		context.close();
		stop.set(true);
		for (Future<?> worker : workers) {
			worker.get(30, TimeUnit.SECONDS);
		}
		pool.shutdown();
		int completedNormally = 0;
		int abandoned = 0;
		int stranded = 0;
		List<String> wrongFailures = new ArrayList<>();
		long waitUntil = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
		for (CompletableFuture<?> future : futures) {
			try {
				future.get(Math.max(0, waitUntil - System.nanoTime()), TimeUnit.NANOSECONDS);
				completedNormally++;
			}
			catch (TimeoutException ex) {
				stranded++;
			}
			catch (ExecutionException ex) {
				if (ex.getCause() instanceof ContextClosedException
						&& String.valueOf(ex.getCause().getMessage()).contains("abandoned at close")) {
					abandoned++;
				}
				else if (wrongFailures.size() < 3) {
					wrongFailures.add(String.valueOf(ex.getCause()));
				}
			}
		}
		List<String> leftThreads = RuntimeThreads.leftSince(threadsBefore, 10);
		long directAfter = directMemoryUsed();
		System.out.printf("close under load (%s, drain timeout %d ms): futures=%d completed=%d abandoned=%d "
				+ "stranded=%d other failures=%s, threads left=%s, direct memory %+d bytes%n", context.backend(),
				drainMillis, futures.size(), completedNormally, abandoned, stranded, wrongFailures, leftThreads,
				directAfter - directBefore);
		assertThat(unexpected).as("errors other than ContextClosedException while closing").isEmpty();
		assertThat(futures).as("futures handed out").isNotEmpty();
		assertThat(stranded).as("futures never completed").isZero();
		assertThat(wrongFailures).as("failures other than 'abandoned at close'").isEmpty();
		if (drainMillis >= 30_000) {
			assertThat(abandoned).as("nothing abandoned when the drain timeout is long enough").isZero();
		}
		assertThat(leftThreads).as("threads of the context still alive").isEmpty();
		assertThat(directAfter - directBefore).as("direct memory still held").isLessThanOrEqualTo(0);
		assertThat(context.streams().stats().size()).isZero();
		assertThat(context.events().live()).isZero();
	}

	/**
	 * Off-heap memory in use: the JVM's direct buffers plus what the CPU backend allocated through
	 * the C library. Read without a GC afterwards, so memory left for the GC to free counts as held.
	 */
	private static long directMemoryUsed() {
		long used = CpuBackendProvider.heldBytes();
		for (BufferPoolMXBean pool : ManagementFactory.getPlatformMXBeans(BufferPoolMXBean.class)) {
			if (pool.getName().equals("direct")) {
				used += pool.getMemoryUsed();
			}
		}
		return used;
	}


}
