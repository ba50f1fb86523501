package dev.gpucompute.internal.memory;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.reflect.Proxy;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

import org.junit.jupiter.api.Test;

import dev.gpucompute.Backend;
import dev.gpucompute.DeviceBuffer;
import dev.gpucompute.ElementType;
import dev.gpucompute.GpuContext;
import dev.gpucompute.HostArray;
import dev.gpucompute.spi.DeviceBackend;

class StagingPoolTests {

	@Test
	void reusesBuffersBySizeClassUpToTheCap() {
		List<ByteBuffer> freed = new ArrayList<>();
		StagingPool pool = new StagingPool(stagingOnly(freed), 64 * 1024);
		ByteBuffer first = pool.take(5000);
		assertThat(first.capacity()).isEqualTo(8192);
		assertThat(first.position()).isZero();
		pool.give(first);
		assertThat(pool.cachedBytes()).isEqualTo(8192);
		assertThat(pool.take(6000)).isSameAs(first);
		assertThat(pool.cachedBytes()).isZero();
		ByteBuffer small = pool.take(1);
		assertThat(small.capacity()).isEqualTo(4096);
		ByteBuffer big = pool.take(100_000);
		pool.give(big);
		assertThat(pool.cachedBytes()).as("over the cap: freed, not kept").isZero();
		assertThat(freed).containsExactly(big);
		pool.give(small);
		pool.give(first);
		assertThat(pool.cachedBytes()).isEqualTo(4096 + 8192);
	}

	@Test
	void copiesReuseStagingAndStillCopyTheRightBytes() {
		try (GpuContext context = GpuContext.builder().backend(Backend.CPU).cpuThreads(2).open();
				DeviceBuffer buffer = context.launcher().allocate(4 * 1000, ElementType.BYTE)) {
			for (int round = 0; round < 5; round++) {
				float[] data = new float[1000];
				for (int i = 0; i < data.length; i++) {
					data[i] = round * 1000 + i;
				}
				buffer.upload(HostArray.of(data), buffer.stream()).join();
				float[] back = new float[1000];
				buffer.download(HostArray.of(back), buffer.stream()).join();
				assertThat(back).containsExactly(data);
			}
			assertThat(context.hostMemory().cachedBytes()).as("staging kept for reuse").isPositive();
		}
	}

	/** A backend that only hands out and frees staging buffers, recording the frees. */
	private static DeviceBackend stagingOnly(List<ByteBuffer> freed) {
		return (DeviceBackend) Proxy.newProxyInstance(DeviceBackend.class.getClassLoader(),
				new Class<?>[] { DeviceBackend.class }, (proxy, method, args) -> switch (method.getName()) {
					case "allocateStaging" -> ByteBuffer.allocateDirect((int) (long) args[0]);
					case "freeStaging" -> {
						freed.add((ByteBuffer) args[0]);
						yield null;
					}
					case "toString" -> "staging-only backend";
					default -> throw new UnsupportedOperationException(method.getName());
				});
	}

	@Test
	void aCloseThatReleasesFreesTheCachedBlocksAndLaterReturns() {
		List<ByteBuffer> freed = new ArrayList<>();
		StagingPool pool = new StagingPool(stagingOnly(freed), 1 << 20);
		ByteBuffer cached = pool.take(5000);
		ByteBuffer lent = pool.take(5000);
		pool.give(cached);
		pool.close(true);
		assertThat(freed).containsExactly(cached);
		assertThat(pool.cachedBytes()).isZero();
		pool.give(lent);
		assertThat(freed).containsExactly(cached, lent);
	}

	@Test
	void aCloseAfterAbandonedWorkFreesNothingNotEvenTheCachedBlocks() {
		// An abandoned copy's completion gives its staging back before the close (as abandoned), while
		// the device may still copy into it behind a kernel that never ends: on CUDA, cuMemFreeHost
		// would free it under that copy or wait for the kernel. The memory goes with the process.
		List<ByteBuffer> freed = new ArrayList<>();
		StagingPool pool = new StagingPool(stagingOnly(freed), 1 << 20);
		ByteBuffer givenBackByAnAbandonedCopy = pool.take(5000);
		ByteBuffer stillWithACopy = pool.take(70_000);
		pool.give(givenBackByAnAbandonedCopy);
		pool.close(false);
		pool.give(stillWithACopy);
		assertThat(freed).isEmpty();
		assertThat(pool.cachedBytes()).isZero();
	}

	/**
	 * Returns that race close: each block is freed exactly once, and none is left unfreed. The blocks
	 * all hold the same bytes (zeroed), so {@code ByteBuffer.equals} finds them equal: a return that
	 * undid its racing add by {@code remove(buffer)} could take another block out of the queue, freeing
	 * its own (which close then freed again) and leaking the other. Two threads take and give blocks
	 * while the pool closes, many times over, so that close lands between a return's add and its
	 * second look at the flag.
	 */
	@Test
	void returnsThatRaceCloseFreeEveryBlockOnceEvenWhenBlocksHoldTheSameBytes() throws Exception {
		int rounds = 400;
		int mismatchedRounds = 0;
		String firstMismatch = null;
		for (int round = 0; round < rounds; round++) {
			Map<ByteBuffer, Integer> frees = Collections.synchronizedMap(new IdentityHashMap<>());
			List<ByteBuffer> allocated = Collections.synchronizedList(new ArrayList<>());
			StagingPool pool = new StagingPool(counting(allocated, frees), 1 << 20);
			ByteBuffer[] zeroed = new ByteBuffer[16];
			for (int i = 0; i < zeroed.length; i++) {
				zeroed[i] = pool.take(4096);
			}
			for (ByteBuffer block : zeroed) {
				pool.give(block);
			}
			AtomicBoolean stop = new AtomicBoolean();
			AtomicLong cycles = new AtomicLong();
			CyclicBarrier start = new CyclicBarrier(3);
			List<Thread> threads = new ArrayList<>();
			for (int t = 0; t < 2; t++) {
				Thread thread = new Thread(() -> {
					try {
						start.await();
					}
					catch (Exception ex) {
						throw new IllegalStateException(ex);
					}
					while (!stop.get()) {
						pool.give(pool.take(4096));
						cycles.incrementAndGet();
					}
				});
				thread.start();
				threads.add(thread);
			}
			start.await();
			while (cycles.get() < 200) {
				Thread.onSpinWait();
			}
			pool.close(true);
			stop.set(true);
			for (Thread thread : threads) {
				thread.join();
			}
			assertThat(pool.cachedBytes()).isZero();
			List<String> wrong = new ArrayList<>();
			for (ByteBuffer block : List.copyOf(allocated)) {
				int freed = frees.getOrDefault(block, 0);
				if (freed != 1) {
					wrong.add("a block freed " + freed + " times");
				}
			}
			if (!wrong.isEmpty()) {
				mismatchedRounds++;
				if (firstMismatch == null) {
					firstMismatch = "round " + round + ": " + wrong;
				}
			}
		}
		assertThat(mismatchedRounds).as("rounds where a block was not freed exactly once (first: %s)", firstMismatch)
			.isZero();
	}

	/** A backend that hands out zeroed staging buffers and counts the frees of each, by identity. */
	private static DeviceBackend counting(List<ByteBuffer> allocated, Map<ByteBuffer, Integer> frees) {
		return (DeviceBackend) Proxy.newProxyInstance(DeviceBackend.class.getClassLoader(),
				new Class<?>[] { DeviceBackend.class }, (proxy, method, args) -> switch (method.getName()) {
					case "allocateStaging" -> {
						ByteBuffer buffer = ByteBuffer.allocateDirect((int) (long) args[0]);
						allocated.add(buffer);
						yield buffer;
					}
					case "freeStaging" -> {
						frees.merge((ByteBuffer) args[0], 1, Integer::sum);
						// A free takes a while (cuMemFreeHost does): close is still emptying the queue when a
						// return that raced it looks at the queue.
						long until = System.nanoTime() + 20_000;
						while (System.nanoTime() < until) {
							Thread.onSpinWait();
						}
						yield null;
					}
					case "toString" -> "counting staging backend";
					default -> throw new UnsupportedOperationException(method.getName());
				});
	}

}
