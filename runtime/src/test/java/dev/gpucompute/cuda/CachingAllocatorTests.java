package dev.gpucompute.cuda;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

import org.junit.jupiter.api.Test;

import dev.gpucompute.GpuOutOfMemoryException;

/**
 * The caching allocator's bookkeeping against a fake driver that records every
 * call: size classes, same-stream and cross-stream reuse, the release threshold, out-of-memory
 * recovery, destroyed streams, concurrency.
 */
class CachingAllocatorTests {

	/** A driver over a device of {@code capacity} bytes that logs its calls. */
	static final class FakeDriver implements CachingAllocator.Driver<String, FakeDriver.Event, Long> {

		static final class Event {

			final int id;

			String recordedOn;

			Event(int id) {
				this.id = id;
			}

		}

		final List<String> calls = Collections.synchronizedList(new ArrayList<>());

		final long capacity;

		long inUse;

		long nextAddress = 0x1000;

		int events;

		FakeDriver(long capacity) {
			this.capacity = capacity;
		}

		@Override
		public synchronized Long allocate(long bytes, String stream) {
			if (this.inUse + bytes > this.capacity) {
				this.calls.add("oom " + bytes + " on " + stream);
				throw new GpuOutOfMemoryException(bytes, "fake device full");
			}
			this.inUse += bytes;
			long address = this.nextAddress;
			this.nextAddress += bytes;
			this.calls.add("alloc " + bytes + " on " + stream);
			return address;
		}

		@Override
		public synchronized void free(Long pointer, long bytes, String stream) {
			this.inUse -= bytes;
			this.calls.add("free " + bytes + " on " + stream);
		}

		@Override
		public long address(Long pointer) {
			return pointer;
		}

		@Override
		public synchronized Event createEvent() {
			return new Event(++this.events);
		}

		@Override
		public void record(Event event, String stream) {
			event.recordedOn = stream;
		}

		@Override
		public void waitFor(String stream, Event event) {
			this.calls.add(stream + " waits for an event on " + event.recordedOn);
		}

		@Override
		public void destroyEvent(Event event) {
		}

		long count(String prefix) {
			synchronized (this.calls) {
				return this.calls.stream().filter((call) -> call.startsWith(prefix)).count();
			}
		}

	}

	private static final long[] SIZES = { 4 << 10, 64 << 10, 1 << 20, 3 << 20, 700 };

	private final FakeDriver driver = new FakeDriver(1L << 40);

	@Test
	void sizeClassesRoundUpBy512BytesThenByAnEighthOfThePowerOfTwo() {
		assertThat(CachingAllocator.sizeClass(0)).isEqualTo(512);
		assertThat(CachingAllocator.sizeClass(1)).isEqualTo(512);
		assertThat(CachingAllocator.sizeClass(513)).isEqualTo(1024);
		assertThat(CachingAllocator.sizeClass(1 << 20)).isEqualTo(1 << 20);
		assertThat(CachingAllocator.sizeClass((1 << 20) + 1)).isEqualTo((1 << 20) + (1 << 17));
		assertThat(CachingAllocator.sizeClass(3L << 20)).isEqualTo(3L << 20);
		assertThat(CachingAllocator.sizeClass((1L << 30) - 1)).isEqualTo(1L << 30);
		for (long bytes = 1; bytes < (1L << 34); bytes = bytes * 3 + 7) {
			long size = CachingAllocator.sizeClass(bytes);
			assertThat(size).isGreaterThanOrEqualTo(bytes);
			assertThat(size - bytes).as("waste for %d", bytes).isLessThanOrEqualTo(Math.max(511, bytes / 8));
		}
	}

	@Test
	void sizeClassesNeverOverflowNearLongMaxValue() {
		// Every path of the rounding near the top of the range: the small steps' largest input, powers of
		// two, the largest class that still fits, and requests whose rounded class would not fit.
		long largestFitting = Long.MAX_VALUE - (Long.MAX_VALUE % (1L << 59)); // 15 steps of 2^59
		assertThat(CachingAllocator.sizeClass((1L << 62) + 1)).isEqualTo((1L << 62) + (1L << 59));
		assertThat(CachingAllocator.sizeClass(1L << 62)).isEqualTo(1L << 62);
		assertThat(CachingAllocator.sizeClass(largestFitting - 1)).isEqualTo(largestFitting);
		assertThat(CachingAllocator.sizeClass(largestFitting)).isEqualTo(largestFitting);
		assertThat(CachingAllocator.sizeClass(largestFitting + 1)).isEqualTo(largestFitting + 1);
		assertThat(CachingAllocator.sizeClass(Long.MAX_VALUE - 1)).isEqualTo(Long.MAX_VALUE - 1);
		assertThat(CachingAllocator.sizeClass(Long.MAX_VALUE)).isEqualTo(Long.MAX_VALUE);
		for (int shift = 20; shift < 63; shift++) {
			for (long bytes : new long[] { (1L << shift) - 1, (1L << shift) + 1, (1L << shift) + (1L << (shift - 1)) + 3 }) {
				long size = CachingAllocator.sizeClass(bytes);
				assertThat(size).as("class of %d", bytes).isGreaterThanOrEqualTo(bytes);
				assertThat(size - bytes).as("waste for %d", bytes).isLessThanOrEqualTo(bytes / 8);
			}
		}
	}

	@Test
	void anImpossibleRequestIsAskedOfTheDriverAndNamedAsItWasMade() {
		CachingAllocator<String, FakeDriver.Event, Long> allocator = new CachingAllocator<>(this.driver, Long.MAX_VALUE);
		assertThatThrownBy(() -> allocator.allocate(Long.MAX_VALUE, "s1")).isInstanceOf(GpuOutOfMemoryException.class)
			.hasMessageStartingWith("Out of device memory allocating " + Long.MAX_VALUE + " bytes");
		assertThat(this.driver.calls).containsExactly("oom " + Long.MAX_VALUE + " on s1");
		CachingAllocator.Stats stats = allocator.stats();
		assertThat(stats.usedBytes()).isZero();
		assertThat(stats.reservedBytes()).isZero();
		assertThat(stats.liveBlocks()).isZero();
	}

	@Test
	void aSteadyLoopOnOneStreamMakesOneDriverAllocation() {
		CachingAllocator<String, FakeDriver.Event, Long> allocator = new CachingAllocator<>(this.driver, Long.MAX_VALUE);
		long address = -1;
		for (int i = 0; i < 1000; i++) {
			CachingAllocator.Block<String, FakeDriver.Event, Long> block = allocator.allocate(4097 + (i % 7), "A");
			if (i == 0) {
				address = block.address;
			}
			assertThat(block.address).isEqualTo(address);
			allocator.free(block, "A");
		}
		assertThat(this.driver.calls).containsExactly("alloc 4608 on A");
		CachingAllocator.Stats stats = allocator.stats();
		assertThat(stats.driverAllocations()).isEqualTo(1);
		assertThat(stats.reuses()).isEqualTo(999);
		assertThat(stats.crossStreamReuses()).isZero();
		assertThat(stats.usedBytes()).isZero();
		assertThat(stats.cachedBytes()).isEqualTo(4608);
		assertThat(stats.reservedBytes()).isEqualTo(4608);
	}

	@Test
	void usedCachedAndReservedBytesAreTracked() {
		CachingAllocator<String, FakeDriver.Event, Long> allocator = new CachingAllocator<>(this.driver, Long.MAX_VALUE);
		var a = allocator.allocate(1000, "A");
		var b = allocator.allocate(5000, "A");
		assertThat(allocator.stats()).isEqualTo(new CachingAllocator.Stats(6000, 0, 1024 + 5120, 2, 2, 0, 0, 0));
		allocator.free(a, "A");
		assertThat(allocator.stats()).isEqualTo(new CachingAllocator.Stats(5000, 1024, 1024 + 5120, 1, 2, 0, 0, 0));
		allocator.free(b, "A");
		assertThat(allocator.stats().usedBytes()).isZero();
		assertThat(allocator.stats().liveBlocks()).isZero();
		assertThat(allocator.stats().cachedBytes()).isEqualTo(6144);
	}

	@Test
	void anotherStreamReusesABlockOnlyAfterWaitingForTheFreeingStreamsEvent() {
		CachingAllocator<String, FakeDriver.Event, Long> allocator = new CachingAllocator<>(this.driver, Long.MAX_VALUE);
		var onA = allocator.allocate(100, "A");
		allocator.free(onA, "A");
		var onB = allocator.allocate(100, "B");
		assertThat(onB).isSameAs(onA);
		assertThat(this.driver.calls).containsExactly("alloc 512 on A", "B waits for an event on A");
		assertThat(allocator.stats().crossStreamReuses()).isEqualTo(1);
		allocator.free(onB, "B");
		var again = allocator.allocate(100, "B");
		assertThat(again).isSameAs(onA);
		assertThat(this.driver.calls).as("same stream: no wait").hasSize(2);
	}

	@Test
	void aStreamsOwnBlocksComeFirst() {
		CachingAllocator<String, FakeDriver.Event, Long> allocator = new CachingAllocator<>(this.driver, Long.MAX_VALUE);
		var a = allocator.allocate(100, "A");
		var b = allocator.allocate(100, "B");
		allocator.free(a, "A");
		allocator.free(b, "B");
		assertThat(allocator.allocate(100, "B")).isSameAs(b);
		assertThat(allocator.allocate(100, "A")).isSameAs(a);
		assertThat(this.driver.count("A waits")).isZero();
		assertThat(this.driver.count("B waits")).isZero();
	}

	@Test
	void blocksOfADestroyedStreamAreReusedThroughTheirEvents() {
		CachingAllocator<String, FakeDriver.Event, Long> allocator = new CachingAllocator<>(this.driver, Long.MAX_VALUE);
		var a = allocator.allocate(100, "A");
		allocator.free(a, "A");
		allocator.streamDestroyed("A");
		assertThat(allocator.allocate(100, "C")).isSameAs(a);
		assertThat(this.driver.calls).containsExactly("alloc 512 on A", "C waits for an event on A");
	}

	@Test
	void theReleaseThresholdGivesTheOldestBlocksBackOrderedAfterTheirLastUse() {
		CachingAllocator<String, FakeDriver.Event, Long> allocator = new CachingAllocator<>(this.driver, 1L << 20);
		var first = allocator.allocate(512 << 10, "A");
		var second = allocator.allocate(512 << 10, "A");
		var third = allocator.allocate(512 << 10, "B");
		allocator.free(first, "A");
		allocator.free(second, "A");
		assertThat(allocator.stats().cachedBytes()).isEqualTo(1 << 20);
		assertThat(this.driver.count("free")).isZero();
		allocator.free(third, "B");
		assertThat(allocator.stats().cachedBytes()).isEqualTo(1 << 20);
		assertThat(this.driver.calls.subList(3, this.driver.calls.size()))
			.as("the oldest (freed on A) goes, freed on B after B waited for A's event")
			.containsExactly("B waits for an event on A", "free 524288 on B");
		assertThat(allocator.stats().driverFrees()).isEqualTo(1);
		assertThat(allocator.stats().reservedBytes()).isEqualTo(1 << 20);
	}

	@Test
	void aThresholdOfZeroCachesNothing() {
		CachingAllocator<String, FakeDriver.Event, Long> allocator = new CachingAllocator<>(this.driver, 0);
		for (int i = 0; i < 3; i++) {
			allocator.free(allocator.allocate(100, "A"), "A");
		}
		assertThat(this.driver.calls).containsExactly("alloc 512 on A", "free 512 on A", "alloc 512 on A", "free 512 on A",
				"alloc 512 on A", "free 512 on A");
		assertThat(this.driver.events).isZero();
		assertThat(allocator.stats().reservedBytes()).isZero();
	}

	@Test
	void outOfMemoryReleasesTheCacheAndTriesOnceMore() {
		FakeDriver small = new FakeDriver(4 << 20);
		CachingAllocator<String, FakeDriver.Event, Long> allocator = new CachingAllocator<>(small, Long.MAX_VALUE);
		var a = allocator.allocate(3 << 20, "A");
		allocator.free(a, "A");
		var b = allocator.allocate(2 << 20, "B");
		assertThat(b.size).isEqualTo(2 << 20);
		assertThat(small.calls).containsExactly("alloc 3145728 on A", "oom 2097152 on B", "B waits for an event on A",
				"free 3145728 on B", "alloc 2097152 on B");
		assertThat(allocator.stats().cachedBytes()).isZero();
		assertThatThrownBy(() -> allocator.allocate(3 << 20, "B")).as("nothing cached to release: the failure stands")
			.isInstanceOf(GpuOutOfMemoryException.class);
		assertThat(allocator.stats().usedBytes()).isEqualTo(2 << 20);
		assertThat(allocator.stats().liveBlocks()).isEqualTo(1);
	}

	@Test
	void concurrentUseNeverHandsOneBlockToTwoHoldersAndBalancesOut() throws Exception {
		CachingAllocator<String, FakeDriver.Event, Long> allocator = new CachingAllocator<>(this.driver, 8L << 20);
		Set<Long> held = ConcurrentHashMap.newKeySet();
		ExecutorService pool = Executors.newFixedThreadPool(4);
		try {
			List<Future<?>> runs = new ArrayList<>();
			for (int t = 0; t < 4; t++) {
				String stream = "S" + t;
				long seed = t;
				runs.add(pool.submit(() -> {
					Random random = new Random(seed);
					List<CachingAllocator.Block<String, FakeDriver.Event, Long>> mine = new ArrayList<>();
					for (int i = 0; i < 20_000; i++) {
						if (mine.size() < 8 && random.nextBoolean()) {
							long bytes = SIZES[random.nextInt(SIZES.length)] - random.nextInt(100);
							var block = allocator.allocate(bytes, (random.nextInt(4) == 0) ? "shared" : stream);
							assertThat(held.add(block.address)).as("block handed out twice").isTrue();
							mine.add(block);
						}
						else if (!mine.isEmpty()) {
							var block = mine.remove(random.nextInt(mine.size()));
							held.remove(block.address);
							allocator.free(block, stream);
						}
					}
					for (var block : mine) {
						held.remove(block.address);
						allocator.free(block, stream);
					}
					return null;
				}));
			}
			for (Future<?> run : runs) {
				run.get();
			}
		}
		finally {
			pool.shutdownNow();
		}
		CachingAllocator.Stats stats = allocator.stats();
		assertThat(stats.usedBytes()).isZero();
		assertThat(stats.liveBlocks()).isZero();
		assertThat(stats.cachedBytes()).isLessThanOrEqualTo(8L << 20);
		assertThat(stats.reservedBytes()).isEqualTo(stats.cachedBytes()).isEqualTo(this.driver.inUse);
		assertThat(stats.reuses()).as("most allocations come from the cache").isGreaterThan(stats.driverAllocations());
		assertThat(allocator.releaseCached("S0")).isEqualTo(stats.cachedBytes());
		assertThat(this.driver.inUse).isZero();
	}

}
