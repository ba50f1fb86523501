package dev.gpucompute.cuda;

import static jcuda.driver.JCudaDriver.cuMemAlloc;
import static jcuda.driver.JCudaDriver.cuMemAllocAsync;
import static jcuda.driver.JCudaDriver.cuMemAllocHost;
import static jcuda.driver.JCudaDriver.cuMemFree;
import static jcuda.driver.JCudaDriver.cuMemFreeAsync;
import static jcuda.driver.JCudaDriver.cuMemFreeHost;
import static jcuda.driver.JCudaDriver.cuMemGetInfo;
import static jcuda.driver.JCudaDriver.cuMemcpyDtoDAsync;
import static jcuda.driver.JCudaDriver.cuMemcpyDtoHAsync;
import static jcuda.driver.JCudaDriver.cuMemcpyHtoDAsync;
import static jcuda.driver.JCudaDriver.cuMemsetD8Async;
import static jcuda.driver.JCudaDriver.cuStreamSynchronize;

import java.lang.reflect.Method;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import dev.gpucompute.GpuException;
import dev.gpucompute.GpuOutOfMemoryException;
import dev.gpucompute.MemoryInfo;
import jcuda.Pointer;
import jcuda.driver.CUdevice;
import jcuda.driver.CUmemPool_attribute;
import jcuda.driver.CUmemoryPool;
import jcuda.driver.JCudaDriver;

/**
 * The memory room of a {@link CudaDeviceBackend}: device allocations, copies and fills enqueued on
 * streams, page-locked staging buffers, and the memory figures. Thread-safe.
 */
final class CudaMemoryManager {

	private static final Logger logger = LoggerFactory.getLogger(CudaMemoryManager.class);

	private final CudaDeviceBackend backend;

	private final CudaDeviceFacts facts;

	private final boolean streamOrderedAllocator;

	private final boolean releaseThresholdApplied;

	private final Set<CudaMemory> allocations = ConcurrentHashMap.newKeySet();

	private final Map<ByteBuffer, Pointer> staging = Collections.synchronizedMap(new IdentityHashMap<>());

	private final AtomicLong usedBytes = new AtomicLong();

	private final AtomicLong liveBuffers = new AtomicLong();

	CudaMemoryManager(CudaDeviceBackend backend, CudaDeviceFacts facts, long releaseThreshold) {
		this.backend = backend;
		this.facts = facts;
		this.streamOrderedAllocator = facts.memoryPoolsSupported;
		this.releaseThresholdApplied = this.streamOrderedAllocator && applyReleaseThreshold(facts.device, releaseThreshold);
	}

	/**
	 * Sets {@code CU_MEMPOOL_ATTR_RELEASE_THRESHOLD} on the device's default pool. JCuda 12.6.0
	 * binds {@code cuMemAllocAsync}/{@code cuMemFreeAsync} but not {@code cuDeviceGetDefaultMemPool}
	 * or {@code cuMemPoolSetAttribute}; they are looked up reflectively, so a JCuda that has them is
	 * used, and without them the pool keeps CUDA's default threshold (0).
	 */
	private static boolean applyReleaseThreshold(CUdevice device, long threshold) {
		Method getPool;
		Method setAttribute;
		try {
			getPool = JCudaDriver.class.getMethod("cuDeviceGetDefaultMemPool", CUmemoryPool.class, CUdevice.class);
			setAttribute = JCudaDriver.class.getMethod("cuMemPoolSetAttribute", CUmemoryPool.class, int.class, Pointer.class);
		}
		catch (NoSuchMethodException ex) {
			if (threshold > 0) {
				logger.info("This JCuda has no binding for cuMemPoolSetAttribute, so the memory pool release threshold "
						+ "({} bytes) is not applied: unused pool memory is returned to the driver at each synchronisation "
						+ "(CUDA's default threshold, 0)", threshold);
			}
			return false;
		}
		try {
			CUmemoryPool pool = new CUmemoryPool();
			int result = (Integer) getPool.invoke(null, pool, device);
			if (result == CudaErrors.SUCCESS) {
				result = (Integer) setAttribute.invoke(null, pool, CUmemPool_attribute.CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
						Pointer.to(new long[] { Math.max(0, threshold) }));
			}
			if (result != CudaErrors.SUCCESS) {
				logger.warn("Could not set the memory pool release threshold: {}", CudaErrors.describe(result));
			}
			return result == CudaErrors.SUCCESS;
		}
		catch (ReflectiveOperationException | RuntimeException ex) {
			logger.warn("Could not set the memory pool release threshold: {}", ex.toString());
			return false;
		}
	}

	boolean streamOrderedAllocator() {
		return this.streamOrderedAllocator;
	}

	boolean releaseThresholdApplied() {
		return this.releaseThresholdApplied;
	}

	/** Checks that {@code memory} is a live allocation of this backend. */
	CudaMemory check(CudaMemory memory) {
		if (memory.isFreed()) {
			throw new GpuException("Device buffer " + memory + " was already freed");
		}
		return memory;
	}

	// ---------------------------------------------------------------- device memory

	/** Allocates on {@code stream}; the caller has entered the backend. */
	CudaMemory allocate(long bytes, CudaStream stream) {
		if (bytes < 0) {
			throw new IllegalArgumentException("Cannot allocate " + bytes + " bytes");
		}
		DevicePointer pointer = new DevicePointer();
		long size = Math.max(bytes, 1);
		int result = this.streamOrderedAllocator ? cuMemAllocAsync(pointer, size, stream.handle) : cuMemAlloc(pointer, size);
		if (result != CudaErrors.SUCCESS) {
			String call = this.streamOrderedAllocator ? "cuMemAllocAsync" : "cuMemAlloc";
			if (CudaErrors.isSticky(result)) {
				this.backend.markUnhealthy(CudaErrors.stickyProblem(result, call, stream.lastKernel, stream.name()));
			}
			throw CudaErrors.toException(result, call, null, stream.name(), bytes);
		}
		CudaMemory memory = new CudaMemory(this.backend, pointer, bytes, this.streamOrderedAllocator);
		this.allocations.add(memory);
		this.usedBytes.addAndGet(bytes);
		this.liveBuffers.incrementAndGet();
		return memory;
	}

	/** Frees after the work enqueued on {@code stream} so far. */
	void free(CudaMemory memory, CudaStream stream) {
		if (!memory.markFreed()) {
			return;
		}
		this.allocations.remove(memory);
		this.usedBytes.addAndGet(-memory.byteSize());
		this.liveBuffers.decrementAndGet();
		this.backend.enter();
		int result;
		if (memory.streamOrdered) {
			result = cuMemFreeAsync(memory.pointer, stream.handle);
		}
		else {
			// cuMemFree is not stream-ordered: wait for the stream's work first, as the SPI promises.
			result = cuStreamSynchronize(stream.handle);
			if (result == CudaErrors.SUCCESS) {
				result = cuMemFree(memory.pointer);
			}
		}
		if (result != CudaErrors.SUCCESS) {
			throw this.backend.streamFailure(result, memory.streamOrdered ? "cuMemFreeAsync" : "cuMemFree", stream);
		}
	}

	void copyToDevice(ByteBuffer src, CudaMemory memory, long dstOffset, long bytes, CudaStream stream) {
		checkHost(src, bytes, "copyToDevice source");
		checkRange(memory, dstOffset, bytes, "copyToDevice");
		if (bytes == 0) {
			return;
		}
		this.backend.enter();
		int result = cuMemcpyHtoDAsync(memory.at(dstOffset), Pointer.to(src).withByteOffset(src.position()), bytes, stream.handle);
		if (result != CudaErrors.SUCCESS) {
			throw this.backend.streamFailure(result, "cuMemcpyHtoDAsync", stream);
		}
	}

	void copyToHost(CudaMemory memory, long srcOffset, ByteBuffer dst, long bytes, CudaStream stream) {
		checkHost(dst, bytes, "copyToHost destination");
		if (dst.isReadOnly()) {
			throw new IllegalArgumentException("copyToHost destination is read-only");
		}
		checkRange(memory, srcOffset, bytes, "copyToHost");
		if (bytes == 0) {
			return;
		}
		this.backend.enter();
		int result = cuMemcpyDtoHAsync(Pointer.to(dst).withByteOffset(dst.position()), memory.at(srcOffset), bytes, stream.handle);
		if (result != CudaErrors.SUCCESS) {
			throw this.backend.streamFailure(result, "cuMemcpyDtoHAsync", stream);
		}
	}

	void copyDeviceToDevice(CudaMemory from, long srcOffset, CudaMemory to, long dstOffset, long bytes, CudaStream stream) {
		checkRange(from, srcOffset, bytes, "copyDeviceToDevice source");
		checkRange(to, dstOffset, bytes, "copyDeviceToDevice destination");
		if (bytes == 0) {
			return;
		}
		this.backend.enter();
		int result = cuMemcpyDtoDAsync(to.at(dstOffset), from.at(srcOffset), bytes, stream.handle);
		if (result != CudaErrors.SUCCESS) {
			throw this.backend.streamFailure(result, "cuMemcpyDtoDAsync", stream);
		}
	}

	void fill(CudaMemory memory, long offset, long bytes, byte value, CudaStream stream) {
		checkRange(memory, offset, bytes, "fill");
		if (bytes == 0) {
			return;
		}
		this.backend.enter();
		int result = cuMemsetD8Async(memory.at(offset), value, bytes, stream.handle);
		if (result != CudaErrors.SUCCESS) {
			throw this.backend.streamFailure(result, "cuMemsetD8Async", stream);
		}
	}

	private static void checkRange(CudaMemory memory, long offset, long bytes, String what) {
		if (offset < 0 || bytes < 0 || offset > memory.byteSize() - bytes) {
			throw new IllegalArgumentException(what + ": " + bytes + " bytes at offset " + offset + " do not fit a buffer of "
					+ memory.byteSize() + " bytes");
		}
	}

	private static void checkHost(ByteBuffer buffer, long bytes, String what) {
		if (!buffer.isDirect()) {
			throw new IllegalArgumentException(what + " must be a direct buffer (use allocateStaging); a heap buffer can "
					+ "move while the asynchronous copy runs");
		}
		if (bytes < 0 || bytes > buffer.remaining()) {
			throw new IllegalArgumentException(what + " has " + buffer.remaining() + " bytes between position and limit, "
					+ bytes + " requested");
		}
	}

	// ---------------------------------------------------------------- staging

	ByteBuffer allocateStaging(long bytes) {
		if (bytes < 0 || bytes > Integer.MAX_VALUE) {
			throw new IllegalArgumentException("A staging buffer holds 0 to " + Integer.MAX_VALUE + " bytes, " + bytes + " requested");
		}
		this.backend.enter();
		Pointer host = new Pointer();
		int result = cuMemAllocHost(host, Math.max(bytes, 1));
		if (result != CudaErrors.SUCCESS) {
			if (result == CudaErrors.OUT_OF_MEMORY) {
				throw new GpuOutOfMemoryException(bytes, "cuMemAllocHost could not allocate page-locked host memory: "
						+ CudaErrors.describe(result));
			}
			throw this.backend.failure(result, "cuMemAllocHost", null, null);
		}
		ByteBuffer buffer = host.getByteBuffer(0, bytes);
		if (buffer == null) {
			cuMemFreeHost(host);
			throw new GpuException("cuMemAllocHost returned no buffer for " + bytes + " bytes");
		}
		buffer.order(ByteOrder.nativeOrder());
		this.staging.put(buffer, host);
		return buffer;
	}

	void freeStaging(ByteBuffer buffer) {
		Pointer host = this.staging.remove(buffer);
		if (this.backend.isClosed()) {
			return; // every staging buffer was freed at close
		}
		if (host == null) {
			throw new IllegalArgumentException("Not a live staging buffer of the CUDA backend of device " + this.facts.ordinal);
		}
		this.backend.enter();
		int result = cuMemFreeHost(host);
		if (result != CudaErrors.SUCCESS) {
			throw this.backend.failure(result, "cuMemFreeHost", null, null);
		}
	}

	// ---------------------------------------------------------------- figures and close

	MemoryInfo memoryInfo() {
		long used = this.usedBytes.get();
		long live = this.liveBuffers.get();
		try {
			this.backend.enter();
			long[] free = new long[1];
			long[] total = new long[1];
			if (cuMemGetInfo(free, total) == CudaErrors.SUCCESS) {
				return new MemoryInfo(used, free[0], total[0], live);
			}
		}
		catch (GpuException ex) {
			// closed or unhealthy: report what this backend knows
		}
		return new MemoryInfo(used, 0, this.facts.info.totalMemoryBytes(), live);
	}

	/**
	 * Frees every device allocation and staging buffer still open, without throwing (backend
	 * close, after the device was synchronised).
	 * @return how many device buffers and staging buffers were left
	 */
	int[] freeAll() {
		int leftBuffers = 0;
		for (CudaMemory memory : List.copyOf(this.allocations)) {
			if (memory.markFreed()) {
				leftBuffers++;
				cuMemFree(memory.pointer);
			}
		}
		this.allocations.clear();
		this.usedBytes.set(0);
		this.liveBuffers.set(0);
		List<Pointer> hosts;
		synchronized (this.staging) {
			hosts = new ArrayList<>(this.staging.values());
			this.staging.clear();
		}
		for (Pointer host : hosts) {
			cuMemFreeHost(host);
		}
		return new int[] { leftBuffers, hosts.size() };
	}

}
