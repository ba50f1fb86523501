package dev.gpucompute.internal.memory;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.BooleanSupplier;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import dev.gpucompute.Backend;
import dev.gpucompute.ContextClosedException;
import dev.gpucompute.CopyFaultInjection;
import dev.gpucompute.DeviceBuffer;
import dev.gpucompute.ElementType;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuContext.HostMemoryInfo;
import dev.gpucompute.GpuException;
import dev.gpucompute.GpuStream;
import dev.gpucompute.HostArray;
import dev.gpucompute.HostBuffer;
import dev.gpucompute.KernelSource;
import dev.gpucompute.LaunchConfig;
import dev.gpucompute.ParamType;
import dev.gpucompute.StagingExhaustedException;
import dev.gpucompute.StreamLease;

/**
 * The staging budget ({@link GpuContextBuilder#stagingBudget(long)}): copies never hold more
 * page-locked staging at once than the budget, whatever their number and size, as measured by the
 * high-water mark of the blocks they hold; a copy larger than the whole budget completes within it;
 * a copy that waits past the staging timeout fails with {@link StagingExhaustedException} and holds
 * nothing; closing the context while copies wait for staging does not hang them. On the CPU backend,
 * with 64 KiB chunks so that a few hundred KiB cross many chunks. And the budget on its own: first
 * come first served, nothing overtakes a waiter.
 */
class StagingBudgetTests {

	private static final int CHUNK = 64 * 1024;

	private static final byte SENTINEL = (byte) 0x5A;

	private final CountDownLatch release = new CountDownLatch(1);

	/** Set when the gate ran out its own wait: nothing released it (or interrupted it) for 30 s. */
	private final AtomicBoolean gateRanOut = new AtomicBoolean();

	/** Holds its stream until {@link #release} (or the context's close interrupts it). */
	private final KernelSource gate = KernelSource.named("gate").params(ParamType.INT).cpu((block, args) -> {
		try {
			if (!this.release.await(30, TimeUnit.SECONDS)) {
				this.gateRanOut.set(true);
			}
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
		}
	});

	private GpuContext context;

	/** The copy faults the context is opened with, which tests arm. */
	private final CopyFaultInjection faults = new CopyFaultInjection();

	private GpuContext open(long budget, Duration timeout) {
		this.context = this.faults.open(GpuContext.builder()
			.backend(Backend.CPU)
			.cpuThreads(4)
			.poolSize(4)
			.maxSize(16)
			.copyChunkSize(CHUNK)
			.copyThreads(2)
			.stagingBudget(budget)
			.stagingTimeout(timeout)
			.drainTimeout(Duration.ofMillis(300)));
		return this.context;
	}

	@AfterEach
	void close() {
		this.release.countDown();
		if (this.context != null) {
			this.faults.clear();
			this.context.close();
		}
	}

	private static byte[] random(SplittableRandom random, int n) {
		byte[] bytes = new byte[n];
		random.nextBytes(bytes);
		return bytes;
	}

	/** Staging goes back when the stream has passed it, which the completion thread sees a moment later. */
	private HostMemoryInfo awaitNoStaging() {
		this.context.synchronizeDevice();
		await(() -> this.context.hostMemory().stagingBytes() == 0);
		return this.context.hostMemory();
	}

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

	/** Device buffers allocated on {@code stream}, then {@code stream} held by the gate kernel. */
	private DeviceBuffer[] gated(GpuStream stream, int buffers, long bytes) {
		DeviceBuffer[] allocated = new DeviceBuffer[buffers];
		for (int i = 0; i < buffers; i++) {
			allocated[i] = this.context.launcher().callWithStream(stream, () -> this.context.launcher().allocate(bytes, ElementType.BYTE));
		}
		this.context.launcher().launch(stream, this.context.launcher().load(this.gate), LaunchConfig.linear(1, 1), 0);
		return allocated;
	}

	@Test
	void manyConcurrentLargeCopiesNeverHoldMoreThanTheBudget() throws Exception {
		long budget = 4L * CHUNK;
		open(budget, Duration.ofSeconds(30));
		int threads = 8;
		CyclicBarrier start = new CyclicBarrier(threads);
		ExecutorService pool = Executors.newFixedThreadPool(threads);
		try {
			List<Future<?>> runs = new ArrayList<>();
			for (int t = 0; t < threads; t++) {
				int seed = t;
				runs.add(pool.submit(() -> {
					SplittableRandom random = new SplittableRandom(seed);
					try (StreamLease lease = this.context.streams().acquire()) {
						GpuStream stream = lease.stream();
						start.await();
						for (int round = 0; round < 4; round++) {
							// 1 MiB and a bit (17 chunks), and one chunk or less.
							int size = (round % 2 == 0) ? 16 * CHUNK + 1000 + random.nextInt(1000) : 1 + random.nextInt(CHUNK);
							byte[] data = random(random, size);
							byte[] back = new byte[size];
							try (DeviceBuffer buffer = this.context.launcher().callWithStream(stream,
									() -> this.context.launcher().allocate(size, ElementType.BYTE))) {
								buffer.upload(HostArray.of(data), stream);
								buffer.download(HostArray.of(back), stream).join();
							}
							assertThat(back).as("thread %d round %d", seed, round).isEqualTo(data);
						}
					}
					return null;
				}));
			}
			for (Future<?> run : runs) {
				run.get(60, TimeUnit.SECONDS);
			}
		}
		finally {
			pool.shutdownNow();
		}
		HostMemoryInfo host = awaitNoStaging();
		assertThat(host.stagingBudgetBytes()).isEqualTo(budget);
		// Without the budget each of the 8 copies held its 1 MiB at once.
		assertThat(host.stagingPeakBytes()).as("most staging held at once").isLessThanOrEqualTo(budget)
			.isGreaterThanOrEqualTo(2L * CHUNK);
		assertThat(host.stagingBytes()).isZero();
		assertThat(host.stagingWaiting()).isZero();
		assertThat(host.stagingTimeouts()).isZero();
	}

	@ParameterizedTest(name = "budget of {0} chunk(s)")
	@CsvSource({ "1", "2", "3" })
	void aCopyLargerThanTheWholeBudgetCompletesWithinIt(int chunks) {
		long budget = (long) chunks * CHUNK;
		open(budget, Duration.ofSeconds(30));
		SplittableRandom random = new SplittableRandom(chunks);
		int size = 64 * CHUNK + 123; // 4 MiB and a bit: 65 chunks
		byte[] data = random(random, size);
		byte[] back = new byte[size];
		try (StreamLease lease = this.context.streams().acquire();
				DeviceBuffer buffer = this.context.launcher().callWithStream(lease.stream(),
						() -> this.context.launcher().allocate(size, ElementType.BYTE))) {
			buffer.upload(HostArray.of(data), lease.stream());
			buffer.download(HostArray.of(back), lease.stream()).join();
			ByteBuffer direct = ByteBuffer.allocateDirect(size);
			buffer.download(HostArray.of(direct), 0, lease.stream()).join();
			byte[] fromDirect = new byte[size];
			direct.get(0, fromDirect);
			assertThat(fromDirect).isEqualTo(data);
		}
		assertThat(back).isEqualTo(data);
		HostMemoryInfo host = awaitNoStaging();
		// Two chunks in flight where the budget has room for them: packing overlaps the bus.
		assertThat(host.stagingPeakBytes()).isEqualTo(budget);
	}

	@Test
	void aCopyAloneHoldsABoundedWindowOfChunksNotItsWholeSize() {
		open(dev.gpucompute.settings.CopySettings.DEFAULT_STAGING_BUDGET, Duration.ofSeconds(30));
		int size = 40 * CHUNK;
		byte[] data = random(new SplittableRandom(7), size);
		byte[] back = new byte[size];
		try (DeviceBuffer buffer = this.context.launcher().allocate(size, ElementType.BYTE)) {
			buffer.upload(HostArray.of(data), buffer.stream()).join(); // one copy at a time
			buffer.download(HostArray.of(back), buffer.stream()).join();
		}
		assertThat(back).isEqualTo(data);
		// 8 chunks per copy (copyThreads 2: two per packing thread is 6, at least 8), where the copy used to hold all 40.
		assertThat(awaitNoStaging().stagingPeakBytes()).isEqualTo(8L * CHUNK);
	}

	@Test
	void aCopyThatWaitsPastTheTimeoutFailsTypedAndHoldsNothing() {
		open(2L * CHUNK, Duration.ofMillis(200));
		try (StreamLease held = this.context.streams().acquire(); StreamLease other = this.context.streams().acquire()) {
			DeviceBuffer[] blockers = gated(held.stream(), 2, CHUNK);
			// Two uploads of one chunk each behind the gate: the whole budget, until the gate opens.
			blockers[0].upload(HostArray.of(new byte[CHUNK]), held.stream());
			blockers[1].upload(HostArray.of(new byte[CHUNK]), held.stream());
			assertThat(this.context.hostMemory().stagingBytes()).isEqualTo(2L * CHUNK);

			GpuStream stream = other.stream();
			try (DeviceBuffer target = this.context.launcher().callWithStream(stream,
					() -> this.context.launcher().allocate(10L * CHUNK, ElementType.BYTE))) {
				target.fill(SENTINEL, stream);
				assertThatThrownBy(() -> target.upload(HostArray.of(new byte[100]), stream)).isInstanceOf(StagingExhaustedException.class)
					.hasMessageContaining("no room for 4096 bytes after 200 ms")
					.hasMessageContaining("in use 131072 of a budget of 131072 bytes")
					.hasMessageContaining("gpu.copies.staging-budget");
				assertThatThrownBy(() -> target.upload(HostArray.of(new byte[10 * CHUNK]), stream))
					.isInstanceOf(StagingExhaustedException.class)
					.satisfies((ex) -> assertThat(((StagingExhaustedException) ex).requestedBytes()).isEqualTo(2L * CHUNK));
				assertThatThrownBy(() -> target.download(HostArray.of(new byte[10 * CHUNK]), stream))
					.isInstanceOf(StagingExhaustedException.class);
				HostMemoryInfo waiting = this.context.hostMemory();
				assertThat(waiting.stagingTimeouts()).isEqualTo(3);
				assertThat(waiting.stagingWaiting()).isZero();
				assertThat(waiting.stagingBytes()).as("nothing taken by the failed copies").isEqualTo(2L * CHUNK);

				this.release.countDown();
				held.stream().synchronize();
				byte[] after = new byte[10 * CHUNK];
				target.download(HostArray.of(after), stream).join();
				assertThat(after).as("nothing of the failed copies was enqueued").containsOnly(SENTINEL);
				// And the budget works again once the blockers are done.
				byte[] data = random(new SplittableRandom(3), 10 * CHUNK);
				target.upload(HostArray.of(data), stream);
				target.download(HostArray.of(after), stream).join();
				assertThat(after).isEqualTo(data);
			}
			for (DeviceBuffer blocker : blockers) {
				blocker.close();
			}
		}
		HostMemoryInfo host = awaitNoStaging();
		assertThat(host.stagingBytes()).isZero();
		assertThat(host.stagingPeakBytes()).isLessThanOrEqualTo(2L * CHUNK);
		assertThat(this.context.streams().stats().active()).isZero();
	}

	@Test
	void closingTheContextWhileCopiesWaitForStagingDoesNotHangThem() throws Exception {
		open(4L * CHUNK, Duration.ofSeconds(60));
		StreamLease held = this.context.streams().acquire();
		StreamLease other = this.context.streams().acquire();
		DeviceBuffer[] gatedBuffers = gated(held.stream(), 1, 20L * CHUNK);
		DeviceBuffer waiterTarget = this.context.launcher().callWithStream(other.stream(),
				() -> this.context.launcher().allocate(CHUNK, ElementType.BYTE));
		ExecutorService threads = Executors.newFixedThreadPool(2);
		try {
			// A large upload behind the gate: it takes the whole budget (4 chunks) and waits for its own
			// chunks to come back from the held stream.
			Future<?> recycling = threads.submit(() -> gatedBuffers[0].upload(HostArray.of(new byte[20 * CHUNK]), held.stream()));
			await(() -> this.context.hostMemory().stagingBytes() == 4L * CHUNK);
			// A small upload on another stream: it waits for room in the budget.
			Future<?> waiting = threads.submit(() -> waiterTarget.upload(HostArray.of(new byte[CHUNK]), other.stream()));
			await(() -> this.context.hostMemory().stagingWaiting() == 1);
			assertThat(this.context.hostMemory().stagingWaiting()).as("a copy waits for staging").isEqualTo(1);
			assertThat(recycling).isNotDone();

			this.context.close();
			// Why each ended, not how long it took: close did not wait for the gate to run out its 30 s,
			// and both copies ended by the close (each would otherwise end by its own 60 s staging timeout,
			// with a StagingExhaustedException), the waiter no longer waiting.
			assertThat(this.gateRanOut).as("close waited for the gate kernel to give up").isFalse();
			assertThatThrownBy(waiting::get).hasCauseInstanceOf(ContextClosedException.class)
				.cause()
				.hasMessageContaining("closed while a copy waited for staging memory");
			assertThatThrownBy(recycling::get).hasCauseInstanceOf(ContextClosedException.class);
		}
		finally {
			this.release.countDown();
			threads.shutdownNow();
		}
	}

	@ParameterizedTest(name = "upload: {0} of chunk {1}")
	@CsvSource({ "PACK, 0", "PACK, 5", "COPY, 0", "COPY, 6", "COPY, 16" })
	void aChunkThatFailsWhileBlocksAreRecycledFailsTheUploadAndLeaksNothing(String step, int chunk) {
		open(2L * CHUNK, Duration.ofSeconds(30));
		byte[] data = random(new SplittableRandom(1), 17 * CHUNK);
		try (StreamLease lease = this.context.streams().acquire();
				DeviceBuffer buffer = this.context.launcher().callWithStream(lease.stream(),
						() -> this.context.launcher().allocate(data.length, ElementType.BYTE))) {
			this.faults.failAt(step, chunk);
			assertThatThrownBy(() -> buffer.upload(HostArray.of(data), lease.stream())).isInstanceOf(GpuException.class)
				.hasMessageContaining(CopyFaultInjection.MESSAGE + ": " + step + " of chunk " + chunk);
			this.faults.clear();
			buffer.upload(HostArray.of(data), lease.stream());
			byte[] back = new byte[data.length];
			buffer.download(HostArray.of(back), lease.stream()).join();
			assertThat(back).isEqualTo(data);
		}
		HostMemoryInfo host = awaitNoStaging();
		assertThat(host.stagingBytes()).isZero();
		assertThat(host.stagingPeakBytes()).isLessThanOrEqualTo(2L * CHUNK);
	}

	@ParameterizedTest(name = "download: {0} of chunk {1}")
	@CsvSource({ "COPY, 0", "COPY, 6", "COPY, 16", "UNPACK, 0", "UNPACK, 5", "UNPACK, 16" })
	void aChunkThatFailsWhileBlocksAreRecycledFailsTheDownloadAndLeaksNothing(String step, int chunk) {
		open(2L * CHUNK, Duration.ofSeconds(30));
		byte[] data = random(new SplittableRandom(2), 17 * CHUNK);
		try (StreamLease lease = this.context.streams().acquire();
				DeviceBuffer buffer = this.context.launcher().callWithStream(lease.stream(),
						() -> this.context.launcher().allocate(data.length, ElementType.BYTE))) {
			buffer.upload(HostArray.of(data), lease.stream());
			this.faults.failAt(step, chunk);
			byte[] back = new byte[data.length];
			String expected = CopyFaultInjection.MESSAGE + ": " + step + " of chunk " + chunk;
			if (step.equals("COPY")) {
				assertThatThrownBy(() -> buffer.download(HostArray.of(back), lease.stream())).isInstanceOf(GpuException.class)
					.hasMessageContaining(expected);
			}
			else {
				CompletableFuture<Void> download = buffer.download(HostArray.of(back), lease.stream());
				assertThatThrownBy(download::join).isInstanceOf(CompletionException.class)
					.hasMessageContaining("Copying chunk " + chunk + " of a download")
					.hasRootCauseMessage(expected);
				assertThat(this.context.hostMemory().stagingBytes())
					.as("staging held once the failed download's future completed").isZero();
			}
			this.faults.clear();
			buffer.download(HostArray.of(back), lease.stream()).join();
			assertThat(back).isEqualTo(data);
		}
		HostMemoryInfo host = awaitNoStaging();
		assertThat(host.stagingBytes()).isZero();
		assertThat(host.stagingPeakBytes()).isLessThanOrEqualTo(2L * CHUNK);
	}

	/**
	 * A copy of one chunk or less whose completion cannot be registered (on CUDA, a refused event
	 * record) is on the stream with nobody to see it end: its block stays out of the pool, but its room
	 * in the budget comes back, as for a chunked copy. Else each such failure shrank the budget for
	 * good: here the next copy of a whole chunk, which needs the whole budget, found no room.
	 */
	@ParameterizedTest(name = "{0}")
	@CsvSource({ "upload", "download" })
	void aSmallCopyWhoseCompletionCannotBeRegisteredGivesItsRoomInTheBudgetBack(String direction) {
		open(CHUNK, Duration.ZERO);
		byte[] data = random(new SplittableRandom(3), CHUNK);
		try (StreamLease lease = this.context.streams().acquire();
				DeviceBuffer buffer = this.context.launcher().callWithStream(lease.stream(),
						() -> this.context.launcher().allocate(data.length, ElementType.BYTE))) {
			byte[] small = new byte[100];
			this.faults.failAt("WATCH", 0);
			assertThatThrownBy(() -> {
				if (direction.equals("upload")) {
					buffer.upload(HostArray.of(small), lease.stream());
				}
				else {
					buffer.download(HostArray.of(small), lease.stream());
				}
			}).isInstanceOf(GpuException.class).hasMessageContaining(CopyFaultInjection.MESSAGE + ": WATCH of chunk 0");
			this.faults.clear();
			this.context.synchronizeDevice();
			buffer.upload(HostArray.of(data), lease.stream()).join(); // its staging is back when its future completes
			byte[] back = new byte[data.length];
			buffer.download(HostArray.of(back), lease.stream()).join();
			assertThat(back).isEqualTo(data);
		}
		assertThat(awaitNoStaging().stagingBytes()).isZero();
	}

	@Test
	void hostBuffersDoNotCountAgainstTheBudget() {
		open(2L * CHUNK, Duration.ofMillis(200));
		try (HostBuffer pinned = this.context.launcher().allocateHost(16L * CHUNK); DeviceBuffer buffer = this.context.launcher()
			.allocate(16L * CHUNK, ElementType.BYTE)) {
			byte[] data = random(new SplittableRandom(5), 16 * CHUNK);
			pinned.put(0, HostArray.of(data));
			buffer.upload(pinned, buffer.stream()).join();
			byte[] back = new byte[data.length];
			buffer.download(HostArray.of(back), buffer.stream()).join(); // through staging: the host buffer takes none of it
			assertThat(back).isEqualTo(data);
			HostMemoryInfo host = awaitNoStaging();
			assertThat(host.hostBufferBytes()).isEqualTo(16L * CHUNK);
			assertThat(host.stagingPeakBytes()).isLessThanOrEqualTo(2L * CHUNK);
			assertThat(host.stagingTimeouts()).isZero();
		}
	}

	/**
	 * Three copies wait, queued in the order A (3), B (1), C (2), on a budget of 4 that is full. Each
	 * release grants the waiters in that order and only while the first fits: B fits long before A
	 * does and still waits behind it, and a copy that asks without waiting does not overtake them. The
	 * copies still waiting are counted right after each release, which grants under the budget's lock,
	 * so no step depends on when a thread wakes; what is left reserved at the end is what
	 * {@code tryAcquire} finds.
	 */
	@Test
	void theBudgetServesWaitersInOrderAndNothingOvertakesThem() {
		StagingBudget budget = new StagingBudget(4, Duration.ofSeconds(30));
		budget.acquire(4);
		CompletableFuture<Void> a = queue(budget, 3, 1);
		CompletableFuture<Void> b = queue(budget, 1, 2);
		CompletableFuture<Void> c = queue(budget, 2, 3);
		assertThat(budget.contended()).isTrue();
		assertThat(budget.tryAcquire(1)).as("fits nothing, and copies wait").isFalse();

		budget.release(1); // 3 used: B would fit, A does not
		assertThat(budget.waiting()).isEqualTo(3);
		assertThat(budget.tryAcquire(1)).as("fits, but copies wait").isFalse();

		budget.release(2); // 1 used: A fits
		assertThat(budget.waiting()).isEqualTo(2);
		a.join();
		assertThat(b).isNotDone();
		assertThat(c).isNotDone();

		budget.release(1); // 3 used: B fits, C does not
		assertThat(budget.waiting()).isEqualTo(1);
		b.join();
		assertThat(c).isNotDone();

		budget.release(3); // A's: C fits
		assertThat(budget.waiting()).isZero();
		c.join();
		assertThat(budget.tryAcquire(1)).isTrue();
		assertThat(budget.tryAcquire(1)).as("full").isFalse();
		assertThat(budget.timeouts()).isZero();
		assertThatThrownBy(() -> budget.acquire(5)).isInstanceOf(IllegalArgumentException.class);
	}

	/** A copy asking for {@code bytes} from another thread, once it is the {@code position}th waiting. */
	private static CompletableFuture<Void> queue(StagingBudget budget, long bytes, int position) {
		CompletableFuture<Void> waiter = new CompletableFuture<>();
		Thread thread = new Thread(() -> {
			try {
				budget.acquire(bytes);
				waiter.complete(null);
			}
			catch (RuntimeException ex) {
				waiter.completeExceptionally(ex);
			}
		}, "staging-waiter-" + position);
		thread.setDaemon(true);
		thread.start();
		await(() -> budget.waiting() == position || waiter.isDone());
		assertThat(budget.waiting()).as("copies waiting once waiter %d asked", position).isEqualTo(position);
		return waiter;
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
		assertThat(budget.tryAcquire(4)).as("the whole budget is free again").isTrue();
		assertThat(budget.timeouts()).isZero();
	}

	@Test
	void aZeroTimeoutFailsAtOnceWhenThereIsNoRoom() {
		StagingBudget budget = new StagingBudget(4, Duration.ZERO);
		budget.acquire(4);
		assertThatThrownBy(() -> budget.acquire(1)).isInstanceOf(StagingExhaustedException.class)
			.hasMessageContaining("no room for 1 bytes after 0 ms (in use 4 of a budget of 4 bytes, 0 other copies waiting)");
		assertThat(budget.timeouts()).isEqualTo(1);
		budget.release(4);
		assertThat(budget.tryAcquire(4)).as("the copy that failed reserved nothing").isTrue();
	}

	@Test
	void aBudgetBelowOneChunkOrATimeoutBelowZeroIsRefused() {
		assertThatThrownBy(() -> GpuContext.builder().backend(Backend.CPU).copyChunkSize(CHUNK).stagingBudget(CHUNK - 4096)
			.open()).isInstanceOf(IllegalArgumentException.class)
			.hasMessageContaining("stagingBudget (61440 bytes) must hold at least one copy chunk (copyChunkSize 65536");
		assertThatThrownBy(() -> GpuContext.builder().stagingBudget(100)).isInstanceOf(IllegalArgumentException.class)
			.hasMessageContaining("at least 4096");
		assertThatThrownBy(() -> GpuContext.builder().stagingTimeout(Duration.ofMillis(-1)))
			.isInstanceOf(IllegalArgumentException.class);
	}

}
