package dev.gpucompute.cuda;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.concurrent.locks.LockSupport;

import dev.gpucompute.ContextClosedException;
import org.jspecify.annotations.Nullable;

/**
 * Host memory a backend lends for the length of one driver call and takes back: a launch's
 * argument slots, a module image while the driver loads it. The memory comes in chunks from a
 * {@link Chunks} allocator (page-locked memory on CUDA) and is freed only when the owner closes,
 * all of it, whatever thread used it: nothing is left for a garbage collection to find, as direct
 * buffers kept per thread were: they still held direct memory after close.
 *
 * <ul>
 * <li><b>Size classes.</b> A request gets a block of the next power of two, at least
 * {@code minBlock}. Classes up to {@code chunkBytes} are carved from chunks of {@code chunkBytes};
 * larger ones get a chunk of their own.</li>
 * <li><b>Reuse.</b> A returned block serves the next request of its class; the number of blocks
 * grows with the number of calls in flight at once, never with the number of threads that ever made
 * one. A few returned blocks are parked in lock-free slots picked by thread, so that a launch
 * usually takes and gives back its block without a lock; the rest are kept under this object's
 * lock.</li>
 * <li><b>Close</b> frees every chunk and reports how many blocks were still lent (a call racing
 * the close); nothing is lent after close. While such a call holds a block, its memory stays: the
 * last of them to return frees the chunks.</li>
 * </ul>
 * Thread-safe. The lock is taken for blocks of larger classes, when no parked block is at hand,
 * and while the pool grows; the allocator is called under it, the chunks are freed outside it.
 *
 * @param <C> the chunk type
 */
final class HostBlocks<C> {

	/** Where chunks come from and go back to. Implementations report failures as exceptions. */
	interface Chunks<C> {

		C allocate(int bytes);

		void free(C chunk);

	}

	/**
	 * A block of a chunk. {@link #view} is the owner's: whatever it derives from the block once
	 * (pointers, buffers) and keeps for the block's next loans.
	 */
	static final class Block<C> {

		final C chunk;

		final int offset;

		final int size;

		/** The owner's cached views of the block, or {@code null} until it sets them. */
		@Nullable Object view;

		Block(C chunk, int offset, int size) {
			this.chunk = chunk;
			this.offset = offset;
			this.size = size;
		}

	}

	/**
	 * A snapshot.
	 * @param chunks chunks held
	 * @param bytes bytes held in them
	 * @param blocks blocks carved so far
	 * @param lent blocks lent now
	 */
	record Stats(int chunks, long bytes, int blocks, int lent) {
	}

	/** The largest class: 1 GiB (a module image past that is not a kernel). */
	static final int MAX_BLOCK = 1 << 30;

	private final Chunks<C> allocator;

	private final int minBlock;

	private final int chunkBytes;

	private final List<C> chunks = new ArrayList<>();

	/** Returned blocks by class (log2 of the size). */
	@SuppressWarnings("unchecked")
	private final ArrayDeque<Block<C>>[] free = new ArrayDeque[31];

	/** Returned blocks of the smallest class, parked where a thread finds one without the lock. */
	private final AtomicReferenceArray<Block<C>> parked;

	private long bytes;

	private int blocks;

	private final AtomicInteger lent = new AtomicInteger();

	private volatile boolean closed;

	/**
	 * @param allocator where chunks come from
	 * @param minBlock the smallest block, a power of two
	 * @param chunkBytes the chunk that small classes are carved from, a power of two at least {@code minBlock}
	 * @param parkingSlots lock-free slots for returned blocks of the smallest class (0: none)
	 */
	HostBlocks(Chunks<C> allocator, int minBlock, int chunkBytes, int parkingSlots) {
		if (Integer.bitCount(minBlock) != 1 || Integer.bitCount(chunkBytes) != 1 || chunkBytes < minBlock) {
			throw new IllegalArgumentException("minBlock (" + minBlock + ") and chunkBytes (" + chunkBytes
					+ ") must be powers of two, chunkBytes at least minBlock");
		}
		this.allocator = Objects.requireNonNull(allocator, "allocator");
		this.minBlock = minBlock;
		this.chunkBytes = chunkBytes;
		this.parked = new AtomicReferenceArray<>(Integer.highestOneBit(Math.max(1, parkingSlots)));
		for (int i = 0; i < this.free.length; i++) {
			this.free[i] = new ArrayDeque<>();
		}
	}

	/** The block size a request of {@code bytes} gets. */
	int classOf(int bytes) {
		if (bytes < 0 || bytes > MAX_BLOCK) {
			throw new IllegalArgumentException("A host block holds 0 to " + MAX_BLOCK + " bytes, " + bytes + " requested");
		}
		return Math.max(this.minBlock, (bytes <= 1) ? 1 : Integer.highestOneBit(bytes - 1) << 1);
	}

	/**
	 * A block of at least {@code bytes}, lent until {@link #release}. Its contents are whatever the
	 * last borrower left.
	 * @throws ContextClosedException after {@link #close()}
	 */
	Block<C> acquire(int bytes) {
		int size = classOf(bytes);
		// Counted before the closed check, and close sets the flag before it reads the count: either
		// this call sees the close and backs out, or the close sees this call and leaves the memory
		// to the last block returned. Taking the block first let close free its chunk in between.
		this.lent.incrementAndGet();
		try {
			if (this.closed) {
				throw closed();
			}
			Block<C> block = (size == this.minBlock) ? this.parked.getAndSet(slot(), null) : null;
			if (block == null) {
				synchronized (this) {
					if (this.closed) {
						throw closed();
					}
					ArrayDeque<Block<C>> list = this.free[Integer.numberOfTrailingZeros(size)];
					if (list.isEmpty() && (size != this.minBlock || !unpark(list))) {
						grow(size, list);
					}
					block = list.pop();
				}
			}
			return block;
		}
		catch (RuntimeException | Error ex) {
			returned();
			throw ex;
		}
	}

	/**
	 * Takes a block back for reuse. After {@link #close()} it is dropped, and the last block lent
	 * at close frees the memory that close left to it.
	 */
	void release(Block<C> block) {
		if (!this.closed) {
			if (block.size != this.minBlock || !this.parked.compareAndSet(slot(), null, block)) {
				synchronized (this) {
					if (!this.closed) {
						this.free[Integer.numberOfTrailingZeros(block.size)].push(block);
					}
				}
			}
			// A block parked just after close emptied the slots stays there unused: acquire checks the
			// flag before it looks at the slots.
		}
		returned();
	}

	/** A loan ended (or an acquire backed out): after close, the last one frees the chunks. */
	private void returned() {
		if (this.lent.decrementAndGet() == 0 && this.closed) {
			freeChunks(); // failures ignored: the call that raced the close has its own outcome
		}
	}

	/** Moves the blocks parked by other threads to {@code list}, rather than growing; whether there were any. */
	private boolean unpark(ArrayDeque<Block<C>> list) {
		for (int i = 0; i < this.parked.length(); i++) {
			Block<C> block = this.parked.getAndSet(i, null);
			if (block != null) {
				list.push(block);
			}
		}
		return !list.isEmpty();
	}

	/** Carves (or allocates) blocks of {@code size} up front, so the first calls allocate nothing. */
	synchronized void reserve(int size) {
		int normalized = classOf(size);
		ArrayDeque<Block<C>> list = this.free[Integer.numberOfTrailingZeros(normalized)];
		if (!this.closed && list.isEmpty()) {
			grow(normalized, list);
		}
	}

	private void grow(int size, ArrayDeque<Block<C>> list) {
		int chunkSize = Math.max(size, this.chunkBytes);
		C chunk = this.allocator.allocate(chunkSize);
		this.chunks.add(chunk);
		this.bytes += chunkSize;
		// A long: for the 1 GiB class an int offset + size passes Integer.MAX_VALUE and wraps, and the loop never ends.
		for (long offset = 0; offset + size <= chunkSize; offset += size) {
			list.push(new Block<>(chunk, (int) offset, size));
			this.blocks++;
		}
	}

	/**
	 * Frees every chunk, or, when calls that raced the close still hold blocks, leaves that to the
	 * last of them to return: memory a borrower still writes, or a driver call still reads, is never
	 * freed under it. Nothing is lent afterwards. Idempotent.
	 * @return how many blocks were lent at that moment (their calls raced the close)
	 */
	int close() {
		synchronized (this) {
			if (this.closed) {
				return 0;
			}
			this.closed = true;
			for (int i = 0; i < this.parked.length(); i++) {
				this.parked.set(i, null);
			}
			for (ArrayDeque<Block<C>> list : this.free) {
				list.clear();
			}
		}
		int stillLent = this.lent.get();
		if (stillLent == 0) {
			RuntimeException failure = freeChunks();
			if (failure != null) {
				throw failure;
			}
		}
		return stillLent;
	}

	/**
	 * Waits up to {@code timeoutNanos} until no block is lent, polling: for an owner that closes
	 * while calls may still be on their way through it.
	 * @return blocks still lent at the end
	 */
	int awaitReturned(long timeoutNanos) {
		long deadline = System.nanoTime() + timeoutNanos;
		int lentNow;
		while ((lentNow = this.lent.get()) > 0 && deadline - System.nanoTime() > 0) {
			LockSupport.parkNanos(100_000);
		}
		return lentNow;
	}

	/** Frees the chunks held, once (close and the last return may both get here); the first failure. */
	private @Nullable RuntimeException freeChunks() {
		List<C> release;
		synchronized (this) {
			release = new ArrayList<>(this.chunks);
			this.chunks.clear();
			this.bytes = 0;
		}
		RuntimeException failure = null;
		for (C chunk : release) {
			try {
				this.allocator.free(chunk);
			}
			catch (RuntimeException ex) {
				if (failure == null) {
					failure = ex;
				}
			}
		}
		return failure;
	}

	synchronized Stats stats() {
		return new Stats(this.chunks.size(), this.bytes, this.blocks, this.lent.get());
	}

	private int slot() {
		@SuppressWarnings("deprecation") // Thread.threadId() is Java 19+
		long id = Thread.currentThread().getId();
		return (int) (id ^ (id >>> 16)) & (this.parked.length() - 1);
	}

	private static ContextClosedException closed() {
		return new ContextClosedException("The host memory of this CUDA backend was freed at close");
	}

}
