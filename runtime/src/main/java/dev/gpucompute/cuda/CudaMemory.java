package dev.gpucompute.cuda;

import java.util.concurrent.atomic.AtomicBoolean;

import dev.gpucompute.spi.NativeMemory;
import jcuda.driver.CUdeviceptr;
import jcuda.driver.CUevent;
import org.jspecify.annotations.Nullable;

/** A device allocation of one {@link CudaDeviceBackend}: a block of its caching allocator, held by one buffer. */
final class CudaMemory implements NativeMemory {

	final CudaDeviceBackend backend;

	final CachingAllocator.Block<CudaStream, CUevent, DevicePointer> block;

	final DevicePointer pointer;

	/** The device address, read once at allocation (the launch path packs it directly). */
	final long address;

	private final long byteSize;

	private final AtomicBoolean freed = new AtomicBoolean();

	CudaMemory(CudaDeviceBackend backend, CachingAllocator.Block<CudaStream, CUevent, DevicePointer> block, long byteSize) {
		this.backend = backend;
		this.block = block;
		this.pointer = block.pointer;
		this.address = block.address;
		this.byteSize = byteSize;
	}

	@Override
	public long byteSize() {
		return this.byteSize;
	}

	/**
	 * {@link CUdeviceptr}: a new pointer object to this allocation (the runtime's own is never handed
	 * out, so a JCuda call that writes into its argument cannot change the runtime's); {@link Long}:
	 * the device address. Makes the context current on the calling thread, for the driver calls that follow.
	 */
	@Override
	public <T> @Nullable T nativeHandle(Class<T> type) {
		this.backend.enter();
		if (type == CUdeviceptr.class) {
			return type.cast(this.pointer.withByteOffset(0));
		}
		if (type == Long.class) {
			return type.cast(this.address);
		}
		return null;
	}

	/** The device pointer {@code offset} bytes in. */
	CUdeviceptr at(long offset) {
		return (offset == 0) ? this.pointer : this.pointer.withByteOffset(offset);
	}

	/** Marks the allocation freed; {@code false} when it already was. */
	boolean markFreed() {
		return this.freed.compareAndSet(false, true);
	}

	boolean isFreed() {
		return this.freed.get();
	}

	@Override
	public String toString() {
		return "CudaMemory[" + this.byteSize + " bytes at 0x" + Long.toHexString(this.address) + (isFreed() ? ", freed" : "") + "]";
	}

}
