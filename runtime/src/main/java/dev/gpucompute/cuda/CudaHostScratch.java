package dev.gpucompute.cuda;

import static jcuda.driver.JCudaDriver.cuMemAllocHost;
import static jcuda.driver.JCudaDriver.cuMemFreeHost;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Objects;

import dev.gpucompute.GpuException;
import dev.gpucompute.GpuOutOfMemoryException;
import dev.gpucompute.spi.LaunchArgs;
import jcuda.Pointer;
import org.jspecify.annotations.Nullable;

/**
 * The host memory a CUDA backend hands its own driver calls: the argument slots of each launch and
 * each module image while the driver loads it, lent from {@link HostBlocks} over page-locked chunks
 * ({@code cuMemAllocHost}, JCuda's allocator of host memory). Every chunk is freed when the backend
 * closes ({@code cuMemFreeHost}, after the device was synchronised: it may wait for the device, so
 * never on a launch or load path). None of it is a Java direct buffer, so none waits for a garbage
 * collection after close, and a launch allocates nothing. Thread-safe.
 *
 * <p>An argument block of {@code capacity} 8-byte slots holds the slots first, then a table of
 * their addresses (the {@code void*[]} that {@code cuLaunchKernel} takes): the driver gets one
 * native pointer, so JCuda builds nothing per argument.
 */
final class CudaHostScratch {

	/** 32 parameters: 32 slots and their 32 addresses. More parameters take a larger block. */
	static final int ARGUMENT_BLOCK = 512;

	private static final int CHUNK = 64 * 1024;

	/** Lock-free parking slots for argument blocks (see {@link HostBlocks}). */
	private static final int PARKING_SLOTS = 64;

	/** A {@link Pointer} whose address Java can read; {@code cuMemAllocHost} sets it. */
	static final class HostPointer extends Pointer {

		long address() {
			return getNativePointer();
		}

	}

	/** One page-locked allocation and a buffer over all of it. */
	record Chunk(HostPointer pointer, ByteBuffer bytes) {
	}

	/** What a block is to the driver, derived once per block. */
	static final class View {

		final Pointer start;

		final ByteBuffer bytes;

		final long address;

		/** The argument table's pointer, set the first time the block carries arguments. */
		@Nullable Pointer table;

		View(Pointer start, ByteBuffer bytes, long address) {
			this.start = start;
			this.bytes = bytes;
			this.address = address;
		}

	}

	private final HostBlocks<Chunk> blocks;

	/**
	 * Reserves the first chunk of argument blocks while the device is idle (the backend is opening),
	 * so that launches allocate nothing until more than {@code CHUNK / ARGUMENT_BLOCK} run at once.
	 */
	CudaHostScratch(CudaDeviceBackend backend) {
		this.blocks = new HostBlocks<>(new PinnedChunks(backend), ARGUMENT_BLOCK, CHUNK, PARKING_SLOTS);
		this.blocks.reserve(ARGUMENT_BLOCK);
	}

	/**
	 * A block for the {@code count} arguments of a launch, packed: the slots and the table of their
	 * addresses written. Give it back with {@link #release} once {@code cuLaunchKernel} returned
	 * (the driver copies the values at the launch).
	 * @return the block; {@link #table} is the launch's {@code kernelParams}
	 */
	HostBlocks.Block<Chunk> arguments(LaunchArgs args, LaunchPacking.Addresses addresses, String kernelName) {
		int count = args.count();
		HostBlocks.Block<Chunk> block = this.blocks.acquire(16 * count);
		try {
			View view = view(block);
			int capacity = block.size / 16;
			LaunchPacking.pack(args, view.bytes, addresses, kernelName);
			writeTable(view.bytes, view.address, capacity, count);
			if (view.table == null) {
				view.table = view.start.withByteOffset(8L * capacity);
			}
			return block;
		}
		catch (RuntimeException | Error ex) {
			this.blocks.release(block);
			throw ex;
		}
	}

	/** The {@code kernelParams} of a block from {@link #arguments}. */
	static @Nullable Pointer table(HostBlocks.Block<Chunk> block) {
		// Set by arguments(): the block's view and table exist.
		return ((View) Objects.requireNonNull(block.view, "view of an argument block")).table;
	}

	/**
	 * Writes the addresses of the first {@code count} slots of an argument block, at {@code address},
	 * into its table after {@code capacity} slots: entry {@code i} is {@code address + 8 * i}.
	 */
	static void writeTable(ByteBuffer block, long address, int capacity, int count) {
		int table = 8 * capacity;
		for (int i = 0; i < count; i++) {
			block.putLong(table + 8 * i, address + 8L * i);
		}
	}

	/**
	 * A block holding {@code image} and a terminating NUL (PTX must end with one), for
	 * {@code cuModuleLoadDataEx}; {@link #start} is its pointer. Give it back with {@link #release}.
	 */
	HostBlocks.Block<Chunk> image(byte[] image) {
		HostBlocks.Block<Chunk> block = this.blocks.acquire(image.length + 1);
		ByteBuffer bytes = view(block).bytes;
		bytes.put(0, image);
		bytes.put(image.length, (byte) 0);
		return block;
	}

	/** The start of a block. */
	static Pointer start(HostBlocks.Block<Chunk> block) {
		// Set by image(): the block's view exists.
		return ((View) Objects.requireNonNull(block.view, "view of an image block")).start;
	}

	void release(HostBlocks.Block<Chunk> block) {
		this.blocks.release(block);
	}

	/**
	 * Frees every chunk (backend close, after the device was synchronised); chunks with a block still
	 * lent to a call that raced the close are freed when that call gives it back.
	 * @return blocks still lent, by calls that raced the close
	 */
	int close() {
		return this.blocks.close();
	}

	/**
	 * Waits up to {@code timeoutNanos} for the launches and loads holding blocks to return them.
	 * @return blocks still lent
	 */
	int awaitReturned(long timeoutNanos) {
		return this.blocks.awaitReturned(timeoutNanos);
	}

	HostBlocks.Stats stats() {
		return this.blocks.stats();
	}

	private static View view(HostBlocks.Block<Chunk> block) {
		View view = (View) block.view;
		if (view == null) {
			Chunk chunk = block.chunk;
			ByteBuffer bytes = chunk.bytes().slice(block.offset, block.size).order(ByteOrder.nativeOrder());
			view = new View(chunk.pointer().withByteOffset(block.offset), bytes, chunk.pointer().address() + block.offset);
			// Published to later borrowers through the pool's lock or its atomic parking slots.
			block.view = view;
		}
		return view;
	}

	/** Page-locked chunks; the backend's context is made current before they are allocated. */
	private static final class PinnedChunks implements HostBlocks.Chunks<Chunk> {

		private final CudaDeviceBackend backend;

		PinnedChunks(CudaDeviceBackend backend) {
			this.backend = backend;
		}

		@Override
		public Chunk allocate(int bytes) {
			// The caller entered the backend, but it waited for the pool's lock since, which may have moved
			// a virtual thread to a carrier where this context is not current.
			this.backend.enterQuietly();
			HostPointer pointer = new HostPointer();
			int result = cuMemAllocHost(pointer, bytes);
			if (result != CudaErrors.SUCCESS) {
				if (result == CudaErrors.OUT_OF_MEMORY) {
					throw new GpuOutOfMemoryException(bytes, "cuMemAllocHost could not allocate page-locked host memory "
							+ "for launch arguments or a module image: " + CudaErrors.describe(result));
				}
				throw this.backend.failure(result, "cuMemAllocHost", null, null);
			}
			ByteBuffer view = pointer.getByteBuffer(0, bytes);
			if (view == null) {
				cuMemFreeHost(pointer);
				throw new GpuException("cuMemAllocHost returned no buffer for " + bytes + " bytes");
			}
			return new Chunk(pointer, view.order(ByteOrder.nativeOrder()));
		}

		@Override
		public void free(Chunk chunk) {
			cuMemFreeHost(chunk.pointer());
		}

	}

}
