package dev.gpucompute.cuda;

import java.util.concurrent.atomic.AtomicBoolean;

import dev.gpucompute.spi.NativeMemory;
import jcuda.driver.CUdeviceptr;

/** A device allocation of one {@link CudaDeviceBackend}. */
final class CudaMemory implements NativeMemory {

	final CudaDeviceBackend backend;

	final DevicePointer pointer;

	/** The device address, read once at allocation (the launch path packs it directly). */
	final long address;

	private final long byteSize;

	/** Whether the allocation came from the stream-ordered allocator (freed with cuMemFreeAsync). */
	final boolean streamOrdered;

	private final AtomicBoolean freed = new AtomicBoolean();

	CudaMemory(CudaDeviceBackend backend, DevicePointer pointer, long byteSize, boolean streamOrdered) {
		this.backend = backend;
		this.pointer = pointer;
		this.address = pointer.address();
		this.byteSize = byteSize;
		this.streamOrdered = streamOrdered;
	}

	@Override
	public long byteSize() {
		return this.byteSize;
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
