package dev.gpucompute.cuda;

import static jcuda.driver.JCudaDriver.cuEventCreate;
import static jcuda.driver.JCudaDriver.cuEventDestroy;
import static jcuda.driver.JCudaDriver.cuEventRecord;
import static jcuda.driver.JCudaDriver.cuMemAlloc;
import static jcuda.driver.JCudaDriver.cuMemAllocAsync;
import static jcuda.driver.JCudaDriver.cuMemFree;
import static jcuda.driver.JCudaDriver.cuMemFreeAsync;
import static jcuda.driver.JCudaDriver.cuStreamSynchronize;
import static jcuda.driver.JCudaDriver.cuStreamWaitEvent;

import jcuda.driver.CUevent;
import jcuda.driver.CUevent_flags;

/**
 * The CUDA side of the {@link CachingAllocator}: stream-ordered {@code cuMemAllocAsync} /
 * {@code cuMemFreeAsync} when {@link AllocatorChoice} allows, else {@code cuMemAlloc} and a
 * {@code cuMemFree} after the stream's work; events without timing for cross-stream reuse. The
 * caller has entered the backend; each call enters it again (a thread-local check on a platform
 * thread), because the allocator's lock sits between that entry and these calls, and waiting for it
 * may move a virtual thread to a carrier where the context is not current.
 */
final class CudaAllocatorDriver implements CachingAllocator.Driver<CudaStream, CUevent, DevicePointer> {

	private final CudaDeviceBackend backend;

	private final boolean streamOrdered;

	CudaAllocatorDriver(CudaDeviceBackend backend, boolean streamOrdered) {
		this.backend = backend;
		this.streamOrdered = streamOrdered;
	}

	boolean streamOrdered() {
		return this.streamOrdered;
	}

	@Override
	public DevicePointer allocate(long bytes, CudaStream stream) {
		this.backend.enterQuietly();
		DevicePointer pointer = new DevicePointer();
		int result = this.streamOrdered ? cuMemAllocAsync(pointer, bytes, stream.handle) : cuMemAlloc(pointer, bytes);
		if (result != CudaErrors.SUCCESS) {
			String call = this.streamOrdered ? "cuMemAllocAsync" : "cuMemAlloc";
			if (CudaErrors.isSticky(result)) {
				this.backend.markUnhealthy(CudaErrors.stickyProblem(result, call, stream.lastKernel, stream.name()));
			}
			throw CudaErrors.toException(result, call, null, stream.name(), bytes);
		}
		return pointer;
	}

	@Override
	public void free(DevicePointer pointer, long bytes, CudaStream stream) {
		this.backend.enterQuietly();
		int result;
		if (this.streamOrdered) {
			result = cuMemFreeAsync(pointer, stream.handle);
		}
		else {
			// cuMemFree is not stream-ordered: wait for the stream's work first, as the SPI promises.
			result = cuStreamSynchronize(stream.handle);
			if (result == CudaErrors.SUCCESS) {
				result = cuMemFree(pointer);
			}
		}
		if (result != CudaErrors.SUCCESS) {
			throw this.backend.streamFailure(result, this.streamOrdered ? "cuMemFreeAsync" : "cuMemFree", stream);
		}
	}

	@Override
	public long address(DevicePointer pointer) {
		return pointer.address();
	}

	@Override
	public CUevent createEvent() {
		this.backend.enterQuietly();
		CUevent event = new CUevent();
		int result = cuEventCreate(event, CUevent_flags.CU_EVENT_DISABLE_TIMING);
		if (result != CudaErrors.SUCCESS) {
			throw this.backend.failure(result, "cuEventCreate", null, null);
		}
		return event;
	}

	@Override
	public void record(CUevent event, CudaStream stream) {
		this.backend.enterQuietly();
		int result = cuEventRecord(event, stream.handle);
		if (result != CudaErrors.SUCCESS) {
			throw this.backend.streamFailure(result, "cuEventRecord", stream);
		}
	}

	@Override
	public void waitFor(CudaStream stream, CUevent event) {
		this.backend.enterQuietly();
		int result = cuStreamWaitEvent(stream.handle, event, 0);
		if (result != CudaErrors.SUCCESS) {
			throw this.backend.streamFailure(result, "cuStreamWaitEvent", stream);
		}
	}

	@Override
	public void destroyEvent(CUevent event) {
		cuEventDestroy(event);
	}

	/** Frees without ordering or throwing, for the backend's close. */
	void freeAtClose(DevicePointer pointer) {
		cuMemFree(pointer);
	}

}
