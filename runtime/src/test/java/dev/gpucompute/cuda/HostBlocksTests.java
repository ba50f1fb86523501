package dev.gpucompute.cuda;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;

import org.junit.jupiter.api.Test;

import dev.gpucompute.ContextClosedException;

/**
 * The bookkeeping of the host memory the CUDA backend lends to launches and module loads, against
 * fake chunks: every chunk is freed at close, whatever threads used it, and the
 * memory grows with the calls in flight at once, not with the threads that ever made one (the
 * per-thread direct buffers it replaces stayed until a garbage collection).
 */
class HostBlocksTests {

	/** Chunks that count allocations and frees; a chunk is its id. */
	static final class FakeChunks implements HostBlocks.Chunks<Integer> {

		final List<String> calls = Collections.synchronizedList(new ArrayList<>());

		final AtomicInteger ids = new AtomicInteger();

		final Set<Integer> live = Collections.synchronizedSet(new java.util.HashSet<>());

		@Override
		public Integer allocate(int bytes) {
			int id = this.ids.incrementAndGet();
			this.live.add(id);
			this.calls.add("allocate " + bytes);
			return id;
		}

		@Override
		public void free(Integer chunk) {
			assertThat(this.live.remove(chunk)).as("chunk %d freed once", chunk).isTrue();
			this.calls.add("free " + chunk);
		}

	}

	private final FakeChunks chunks = new FakeChunks();

	private final HostBlocks<Integer> blocks = new HostBlocks<>(this.chunks, 512, 64 * 1024, 64);

	@Test
	void requestsGetThePowerOfTwoAboveAtLeastTheSmallestBlock() {
		assertThat(this.blocks.classOf(0)).isEqualTo(512);
		assertThat(this.blocks.classOf(1)).isEqualTo(512);
		assertThat(this.blocks.classOf(512)).isEqualTo(512);
		assertThat(this.blocks.classOf(513)).isEqualTo(1024);
		assertThat(this.blocks.classOf(7000)).isEqualTo(8192);
		assertThat(this.blocks.classOf(HostBlocks.MAX_BLOCK)).isEqualTo(HostBlocks.MAX_BLOCK);
		assertThatThrownBy(() -> this.blocks.classOf(HostBlocks.MAX_BLOCK + 1)).isInstanceOf(IllegalArgumentException.class)
			.hasMessageContaining(String.valueOf(HostBlocks.MAX_BLOCK + 1));
		assertThatThrownBy(() -> this.blocks.classOf(-1)).isInstanceOf(IllegalArgumentException.class);
	}

	@Test
	void aReservedChunkServesASteadyLoopWithoutAnotherAllocation() {
		this.blocks.reserve(512);
		assertThat(this.chunks.calls).containsExactly("allocate 65536");
		assertThat(this.blocks.stats()).isEqualTo(new HostBlocks.Stats(1, 65536, 128, 0));
		HostBlocks.Block<Integer> first = this.blocks.acquire(16 * 6);
		this.blocks.release(first);
		for (int i = 0; i < 10_000; i++) {
			HostBlocks.Block<Integer> block = this.blocks.acquire(16 * (i % 32));
			assertThat(block).isSameAs(first);
			this.blocks.release(block);
		}
		assertThat(this.chunks.calls).containsExactly("allocate 65536");
	}

	@Test
	void smallClassesAreCarvedFromOneChunkAndLargeOnesGetTheirOwn() {
		List<HostBlocks.Block<Integer>> held = new ArrayList<>();
		for (int i = 0; i < 128; i++) {
			held.add(this.blocks.acquire(100));
		}
		assertThat(held).extracting((block) -> block.chunk).containsOnly(1);
		assertThat(held).extracting((block) -> block.offset).doesNotHaveDuplicates().allSatisfy((offset) -> {
			assertThat(offset % 512).isZero();
			assertThat(offset).isBetween(0, 65536 - 512);
		});
		held.add(this.blocks.acquire(100)); // the 129th at once: a second chunk
		HostBlocks.Block<Integer> image = this.blocks.acquire(200_000);
		assertThat(image.size).isEqualTo(256 * 1024);
		assertThat(image.offset).isZero();
		assertThat(this.chunks.calls).containsExactly("allocate 65536", "allocate 65536", "allocate 262144");
		this.blocks.release(image);
		assertThat(this.blocks.acquire(150_000)).isSameAs(image);
		assertThat(this.blocks.stats().lent()).isEqualTo(130);
	}

	@Test
	void theLargestClassIsOneBlockAtTheStartOfItsOwnChunk() {
		// A module image of 512 MiB to 1 GiB. The carving loop's int offset used to wrap past 2^31 there,
		// pushing blocks at negative offsets forever under the lock: start-up hung until the heap ran out.
		HostBlocks.Block<Integer> image = assertTimeoutPreemptively(Duration.ofSeconds(10),
				() -> this.blocks.acquire(HostBlocks.MAX_BLOCK));
		assertThat(image.offset).isZero();
		assertThat(image.size).isEqualTo(HostBlocks.MAX_BLOCK);
		assertThat(this.blocks.stats()).isEqualTo(new HostBlocks.Stats(1, HostBlocks.MAX_BLOCK, 1, 1));
		this.blocks.release(image);
		assertThat(this.blocks.acquire(HostBlocks.MAX_BLOCK / 2 + 1)).isSameAs(image);
	}

	@Test
	void memoryGrowsWithCallsInFlightNotWithThreadsThatEverMadeOne() throws Exception {
		// 200 short-lived threads, 8 at a time, each making launches: the blocks of finished threads are reused.
		ExecutorService pool = Executors.newFixedThreadPool(8, (runnable) -> new Thread(runnable));
		List<Future<?>> done = new ArrayList<>();
		Set<HostBlocks.Block<Integer>> inUse = Collections.newSetFromMap(Collections.synchronizedMap(new IdentityHashMap<>()));
		AtomicInteger doubleLent = new AtomicInteger();
		for (int t = 0; t < 200; t++) {
			done.add(pool.submit(() -> {
				Thread worker = new Thread(() -> {
					for (int i = 0; i < 200; i++) {
						HostBlocks.Block<Integer> block = this.blocks.acquire(16 * (1 + i % 32));
						if (!inUse.add(block)) {
							doubleLent.incrementAndGet();
						}
						inUse.remove(block);
						this.blocks.release(block);
					}
				});
				worker.start();
				try {
					worker.join();
				}
				catch (InterruptedException ex) {
					Thread.currentThread().interrupt();
				}
			}));
		}
		for (Future<?> future : done) {
			future.get(30, TimeUnit.SECONDS);
		}
		pool.shutdown();
		assertThat(doubleLent).as("a block lent to two callers at once").hasValue(0);
		assertThat(this.blocks.stats().chunks()).isEqualTo(1);
		assertThat(this.blocks.stats().lent()).isZero();
	}

	@Test
	void blocksParkedByOtherThreadsAreTakenBeforeTheMemoryGrows() throws Exception {
		HostBlocks<Integer> onePerChunk = new HostBlocks<>(this.chunks, 512, 512, 64);
		Thread parker = new Thread(() -> onePerChunk.release(onePerChunk.acquire(64)));
		parker.start();
		parker.join();
		HostBlocks.Block<Integer> block = onePerChunk.acquire(64);
		assertThat(block.chunk).isEqualTo(1);
		assertThat(this.chunks.calls).containsExactly("allocate 512");
	}

	@Test
	void closeFreesEveryChunkOnce() throws Exception {
		CountDownLatch used = new CountDownLatch(4);
		List<Thread> threads = new ArrayList<>();
		for (int t = 0; t < 4; t++) {
			Thread thread = new Thread(() -> {
				this.blocks.release(this.blocks.acquire(100)); // parked in this thread's slot
				this.blocks.release(this.blocks.acquire(5000)); // kept under the lock
				used.countDown();
			});
			threads.add(thread);
			thread.start();
		}
		assertThat(used.await(10, TimeUnit.SECONDS)).isTrue();
		for (Thread thread : threads) {
			thread.join();
		}
		assertThat(this.blocks.close()).isZero();
		assertThat(this.chunks.live).as("chunks not freed").isEmpty();
		assertThat(this.chunks.calls.stream().filter((call) -> call.startsWith("free"))).hasSize(this.chunks.ids.get());
		assertThat(this.blocks.stats().bytes()).isZero();
		assertThat(this.blocks.close()).isZero();
		assertThatThrownBy(() -> this.blocks.acquire(100)).isInstanceOf(ContextClosedException.class)
			.hasMessageContaining("freed at close");
		assertThatThrownBy(() -> this.blocks.acquire(5000)).isInstanceOf(ContextClosedException.class);
	}

	@Test
	void aBlockStillLentAtCloseKeepsTheMemoryUntilItIsReturned() {
		HostBlocks.Block<Integer> parked = this.blocks.acquire(100);
		this.blocks.release(parked);
		HostBlocks.Block<Integer> racing = this.blocks.acquire(2_000_000); // a launch or load still in the driver
		assertThat(this.blocks.close()).as("blocks lent at close").isEqualTo(1);
		assertThat(this.chunks.live).as("freed under the call that still uses a block").containsExactlyInAnyOrder(1, 2);
		assertThatThrownBy(() -> this.blocks.acquire(100)).isInstanceOf(ContextClosedException.class);
		assertThat(this.blocks.stats().lent()).as("a refused acquire counts as returned").isEqualTo(1);
		assertThat(this.chunks.live).isNotEmpty();
		this.blocks.release(racing);
		assertThat(this.chunks.live).as("freed by the last return").isEmpty();
		assertThat(this.chunks.calls).containsExactly("allocate 65536", "allocate 2097152", "free 1", "free 2");
		assertThat(this.blocks.close()).isZero();
		assertThat(this.chunks.calls).hasSize(4);
	}

	@Test
	void awaitReturnedWaitsForCallsInFlightAndGivesUpAtItsTimeout() throws Exception {
		HostBlocks.Block<Integer> held = this.blocks.acquire(100);
		long started = System.nanoTime();
		assertThat(this.blocks.awaitReturned(TimeUnit.MILLISECONDS.toNanos(50))).isEqualTo(1);
		assertThat(System.nanoTime() - started).isGreaterThanOrEqualTo(TimeUnit.MILLISECONDS.toNanos(50));
		Thread returning = new Thread(() -> {
			LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(20));
			this.blocks.release(held);
		});
		returning.start();
		assertThat(this.blocks.awaitReturned(TimeUnit.SECONDS.toNanos(30))).isZero();
		returning.join();
		assertThat(this.blocks.awaitReturned(0)).isZero();
	}

	@Test
	void closeRacingBorrowersNeverFreesAChunkUnderOne() throws Exception {
		// Borrowers write into their block while close runs: a chunk freed under a block in use is a
		// crash on CUDA (packing into unmapped page-locked memory, or the driver reading the argument table).
		for (int round = 0; round < 20; round++) {
			FakeChunks fake = new FakeChunks();
			HostBlocks<Integer> pool = new HostBlocks<>(fake, 512, 4096, 4);
			AtomicInteger freedUnderABorrower = new AtomicInteger();
			AtomicInteger loans = new AtomicInteger();
			CountDownLatch running = new CountDownLatch(4);
			List<Thread> borrowers = new ArrayList<>();
			for (int t = 0; t < 4; t++) {
				int size = (t % 2 == 0) ? 64 : 3000;
				Thread borrower = new Thread(() -> {
					running.countDown();
					try {
						for (;;) {
							HostBlocks.Block<Integer> block = pool.acquire(size);
							loans.incrementAndGet();
							for (int i = 0; i < 3; i++) {
								if (!fake.live.contains(block.chunk)) {
									freedUnderABorrower.incrementAndGet();
								}
								Thread.yield();
							}
							pool.release(block);
						}
					}
					catch (ContextClosedException ex) {
						// the end of this borrower
					}
				});
				borrowers.add(borrower);
				borrower.start();
			}
			assertThat(running.await(10, TimeUnit.SECONDS)).isTrue();
			while (loans.get() < 200) {
				Thread.onSpinWait();
			}
			pool.close();
			for (Thread borrower : borrowers) {
				borrower.join(TimeUnit.SECONDS.toMillis(10));
				assertThat(borrower.isAlive()).isFalse();
			}
			assertThat(freedUnderABorrower).as("round %d: chunk freed while a borrower held a block of it", round).hasValue(0);
			assertThat(fake.live).as("round %d: chunks left after every borrower returned", round).isEmpty();
			assertThat(pool.stats().lent()).isZero();
		}
	}

}
