package dev.gpucompute.cuda;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;

import dev.gpucompute.GpuOutOfMemoryException;
import org.jspecify.annotations.Nullable;

/**
 * A stream-aware caching allocator for device memory, after PyTorch's {@code CUDACachingAllocator}
 * and CuPy's memory pool. A freed block is not given back to the driver but cached, keyed by the
 * stream it was freed on and by its size class, so that a steady allocate/free loop makes no
 * driver call after the first round:
 * <ul>
 * <li><b>Size classes.</b> Up to 1 MiB a request is rounded up to a multiple of 512 bytes; above, to
 * one of eight steps per power of two (at most 12.5% over the request). A block is reused only for
 * its own class.</li>
 * <li><b>Same stream.</b> A block freed on stream S is reused at once by the next allocation of its
 * class on S: everything enqueued on S after the allocation runs after the work before the free.</li>
 * <li><b>Other streams.</b> At the free an event is recorded on S (one event per block, created once
 * and re-recorded). An allocation on stream T that finds nothing cached for T takes the oldest
 * block of its class from another stream and makes T wait for that event, on the device, without
 * blocking the host. Blocks of a destroyed stream stay usable this way.</li>
 * <li><b>Release threshold.</b> When the cached bytes exceed the threshold after a free, the
 * oldest cached blocks go back to the driver until they no longer do ({@code Long.MAX_VALUE}: keep
 * all, 0: cache nothing). The free is ordered after the block's last use by the same event.</li>
 * <li><b>Out of memory.</b> When the driver cannot allocate, every cached block is released and
 * the allocation is tried once more before the failure is reported.</li>
 * </ul>
 * The driver calls are behind {@link Driver}, so the bookkeeping is tested with a fake. Thread-safe:
 * the bookkeeping is guarded by this object's lock, held for no driver call that allocates or
 * frees; recording an event happens before the block is published.
 *
 * @param <S> the stream type
 * @param <E> the event type
 * @param <P> the device pointer type
 */
final class CachingAllocator<S, E, P> {

	/** The driver calls the allocator needs. Implementations report failures as {@code GpuException}s. */
	interface Driver<S, E, P> {

		/**
		 * Allocates {@code bytes} of device memory, ordered on {@code stream}.
		 * @throws GpuOutOfMemoryException when the device has no room
		 */
		P allocate(long bytes, S stream);

		/** Frees memory from {@link #allocate}, after the work enqueued on {@code stream} so far. */
		void free(P pointer, long bytes, S stream);

		/** The device address of a pointer, for argument packing and messages. */
		long address(P pointer);

		E createEvent();

		/** Records {@code event} on {@code stream}: it completes when the work enqueued there so far has. */
		void record(E event, S stream);

		/** Makes later work on {@code stream} wait for {@code event}, without blocking the host. */
		void waitFor(S stream, E event);

		void destroyEvent(E event);

	}

	/** A block of device memory: one driver allocation of one size class. */
	static final class Block<S, E, P> {

		final P pointer;

		final long address;

		/** The size class: what was asked of the driver. */
		final long size;

		/** The stream it was last freed on, or {@code null} while in use or after its stream was destroyed. */
		@Nullable S stream;

		/** Recorded on {@link #stream} at the last free; created at the first free. */
		@Nullable E event;

		/** The bytes the current holder asked for (at most {@link #size}). */
		long requested;

		Block(P pointer, long address, long size) {
			this.pointer = pointer;
			this.address = address;
			this.size = size;
		}

	}

	/**
	 * A snapshot of the allocator.
	 * @param usedBytes bytes asked for by the blocks in use
	 * @param cachedBytes bytes held in cached blocks, ready for reuse
	 * @param reservedBytes bytes held from the driver: the size classes of blocks in use plus the cached bytes
	 * @param liveBlocks blocks in use
	 * @param driverAllocations allocations asked of the driver so far
	 * @param driverFrees blocks given back to the driver so far
	 * @param reuses allocations served from the cache (same stream or another)
	 * @param crossStreamReuses of those, blocks taken from another stream (with an event wait)
	 */
	record Stats(long usedBytes, long cachedBytes, long reservedBytes, long liveBlocks, long driverAllocations,
			long driverFrees, long reuses, long crossStreamReuses) {
	}

	private static final long SMALL_LIMIT = 1L << 20;

	private static final long SMALL_STEP = 512;

	private final Driver<S, E, P> driver;

	private final long releaseThreshold;

	/** Cached blocks by stream (null: destroyed streams), then by size class; newest last. */
	private final Map<S, Map<Long, ArrayDeque<Block<S, E, P>>>> byStream = new HashMap<>();

	/** Cached blocks by size class, oldest first, whatever their stream. */
	private final Map<Long, LinkedHashSet<Block<S, E, P>>> bySize = new HashMap<>();

	/** All cached blocks, oldest first: the order the threshold releases them in. */
	private final LinkedHashSet<Block<S, E, P>> cached = new LinkedHashSet<>();

	private long usedBytes;

	private long cachedBytes;

	private long reservedBytes;

	private long liveBlocks;

	private long driverAllocations;

	private long driverFrees;

	private long reuses;

	private long crossStreamReuses;

	/**
	 * @param driver the driver calls
	 * @param releaseThreshold the most bytes kept cached; {@code Long.MAX_VALUE} keeps all
	 */
	CachingAllocator(Driver<S, E, P> driver, long releaseThreshold) {
		this.driver = Objects.requireNonNull(driver, "driver");
		this.releaseThreshold = Math.max(0, releaseThreshold);
	}

	/**
	 * The size class of a request of {@code bytes}: at least {@code bytes}, never negative. A request
	 * so large that its rounded class would pass {@code Long.MAX_VALUE} is its own class, so the
	 * driver is asked for exactly that (and its error names it).
	 */
	static long sizeClass(long bytes) {
		long size = Math.max(bytes, 1);
		if (size <= SMALL_LIMIT) {
			return roundUp(size, SMALL_STEP);
		}
		long power = Long.highestOneBit(size);
		return (power == size) ? size : roundUp(size, power >> 3);
	}

	/**
	 * {@code size} rounded up to a multiple of {@code step}, or {@code size} itself where that
	 * multiple does not fit a long: {@code (size + step - 1) / step * step} overflowed there and
	 * turned a request of {@code Long.MAX_VALUE} bytes into a negative size.
	 */
	private static long roundUp(long size, long step) {
		long remainder = size % step;
		if (remainder == 0) {
			return size;
		}
		long up = step - remainder;
		return (size > Long.MAX_VALUE - up) ? size : size + up;
	}

	long releaseThreshold() {
		return this.releaseThreshold;
	}

	/**
	 * A block of at least {@code bytes}, usable by work enqueued on {@code stream} from now on.
	 * @throws GpuOutOfMemoryException when the device has no room even after the cache was released
	 */
	Block<S, E, P> allocate(long bytes, S stream) {
		long size = sizeClass(bytes);
		Block<S, E, P> block = takeCached(size, stream);
		if (block == null) {
			block = fromDriver(size, stream);
		}
		synchronized (this) {
			block.requested = bytes;
			this.usedBytes += bytes;
			this.liveBlocks++;
		}
		return block;
	}

	/** A cached block of {@code size} for {@code stream}, made safe to use there, or {@code null}. */
	private @Nullable Block<S, E, P> takeCached(long size, S stream) {
		Block<S, E, P> block;
		boolean crossStream;
		synchronized (this) {
			block = pollSameStream(stream, size);
			crossStream = false;
			if (block == null) {
				LinkedHashSet<Block<S, E, P>> ofSize = this.bySize.get(size);
				if (ofSize == null || ofSize.isEmpty()) {
					return null;
				}
				block = ofSize.iterator().next();
				unlink(block);
				crossStream = true;
				this.crossStreamReuses++;
			}
			this.cachedBytes -= block.size;
			this.reuses++;
		}
		if (crossStream) {
			// The block's last user may still be running on its stream: this stream waits for it on the device.
			// A cached block was freed, so it has its event (JCuda throws NullPointerException for a null one too).
			this.driver.waitFor(stream, Objects.requireNonNull(block.event, "event of a cached block"));
		}
		block.stream = null;
		return block;
	}

	private @Nullable Block<S, E, P> pollSameStream(S stream, long size) {
		Map<Long, ArrayDeque<Block<S, E, P>>> lists = this.byStream.get(stream);
		ArrayDeque<Block<S, E, P>> list = (lists != null) ? lists.get(size) : null;
		if (list == null || list.isEmpty()) {
			return null;
		}
		Block<S, E, P> block = list.pollLast();
		// Every block in a stream's list is in its size's set too.
		Objects.requireNonNull(this.bySize.get(size), "size set of a cached block").remove(block);
		this.cached.remove(block);
		return block;
	}

	private Block<S, E, P> fromDriver(long size, S stream) {
		P pointer;
		try {
			pointer = this.driver.allocate(size, stream);
		}
		catch (GpuOutOfMemoryException ex) {
			if (releaseCached(stream) == 0) {
				throw ex;
			}
			pointer = this.driver.allocate(size, stream);
		}
		synchronized (this) {
			this.driverAllocations++;
			this.reservedBytes += size;
		}
		return new Block<>(pointer, this.driver.address(pointer), size);
	}

	/**
	 * Takes a block back: cached for reuse after the work enqueued on {@code stream} so far, and
	 * released to the driver when the cache is over its threshold.
	 */
	void free(Block<S, E, P> block, S stream) {
		if (this.releaseThreshold == 0) {
			// Nothing is cached: straight back to the driver, without an event.
			synchronized (this) {
				this.usedBytes -= block.requested;
				this.liveBlocks--;
				block.requested = 0;
			}
			release(List.of(block), stream);
			return;
		}
		if (block.event == null) {
			block.event = this.driver.createEvent();
		}
		this.driver.record(block.event, stream);
		List<Block<S, E, P>> release;
		synchronized (this) {
			this.usedBytes -= block.requested;
			this.liveBlocks--;
			block.requested = 0;
			block.stream = stream;
			this.byStream.computeIfAbsent(stream, (key) -> new HashMap<>())
				.computeIfAbsent(block.size, (key) -> new ArrayDeque<>())
				.addLast(block);
			this.bySize.computeIfAbsent(block.size, (key) -> new LinkedHashSet<>()).add(block);
			this.cached.add(block);
			this.cachedBytes += block.size;
			release = overThreshold();
		}
		release(release, stream);
	}

	/** Unlinks the oldest cached blocks until the cached bytes are within the threshold. */
	private List<Block<S, E, P>> overThreshold() {
		List<Block<S, E, P>> release = new ArrayList<>();
		Iterator<Block<S, E, P>> oldest = this.cached.iterator();
		while (this.cachedBytes > this.releaseThreshold && oldest.hasNext()) {
			Block<S, E, P> block = oldest.next();
			oldest.remove();
			unlinkFromLists(block);
			this.cachedBytes -= block.size;
			release.add(block);
		}
		return release;
	}

	/**
	 * Gives every cached block back to the driver, each freed on {@code via} after its last use.
	 * @return the bytes released
	 */
	long releaseCached(S via) {
		List<Block<S, E, P>> release;
		synchronized (this) {
			release = new ArrayList<>(this.cached);
			for (Block<S, E, P> block : release) {
				unlinkFromLists(block);
				this.cachedBytes -= block.size;
			}
			this.cached.clear();
		}
		release(release, via);
		long bytes = 0;
		for (Block<S, E, P> block : release) {
			bytes += block.size;
		}
		return bytes;
	}

	private void release(List<Block<S, E, P>> blocks, S via) {
		for (Block<S, E, P> block : blocks) {
			if (block.event != null && block.stream != via) {
				this.driver.waitFor(via, block.event);
			}
			this.driver.free(block.pointer, block.size, via);
			if (block.event != null) {
				this.driver.destroyEvent(block.event);
			}
			synchronized (this) {
				this.driverFrees++;
				this.reservedBytes -= block.size;
			}
		}
	}

	/**
	 * A stream is about to be destroyed (its work done): its cached blocks stay cached, reusable by
	 * any stream through their events.
	 */
	synchronized void streamDestroyed(S stream) {
		Map<Long, ArrayDeque<Block<S, E, P>>> lists = this.byStream.remove(stream);
		if (lists == null) {
			return;
		}
		Map<Long, ArrayDeque<Block<S, E, P>>> orphans = this.byStream.computeIfAbsent(null, (key) -> new HashMap<>());
		for (Map.Entry<Long, ArrayDeque<Block<S, E, P>>> entry : lists.entrySet()) {
			for (Block<S, E, P> block : entry.getValue()) {
				block.stream = null;
				orphans.computeIfAbsent(entry.getKey(), (key) -> new ArrayDeque<>()).addLast(block);
			}
		}
	}

	private void unlink(Block<S, E, P> block) {
		unlinkFromLists(block);
		this.cached.remove(block);
	}

	private void unlinkFromLists(Block<S, E, P> block) {
		Map<Long, ArrayDeque<Block<S, E, P>>> lists = this.byStream.get(block.stream);
		if (lists != null) {
			ArrayDeque<Block<S, E, P>> list = lists.get(block.size);
			if (list != null) {
				list.removeFirstOccurrence(block);
			}
		}
		LinkedHashSet<Block<S, E, P>> ofSize = this.bySize.get(block.size);
		if (ofSize != null) {
			ofSize.remove(block);
		}
	}

	/**
	 * Everything cached, unlinked, for the owner's close: it frees them (and the blocks still in use)
	 * as it sees fit. The allocator is empty afterwards.
	 */
	synchronized List<Block<S, E, P>> drainCached() {
		List<Block<S, E, P>> all = new ArrayList<>(this.cached);
		this.cached.clear();
		this.byStream.clear();
		this.bySize.clear();
		this.reservedBytes -= this.cachedBytes;
		this.cachedBytes = 0;
		return all;
	}

	synchronized Stats stats() {
		return new Stats(this.usedBytes, this.cachedBytes, this.reservedBytes, this.liveBlocks, this.driverAllocations,
				this.driverFrees, this.reuses, this.crossStreamReuses);
	}

}
