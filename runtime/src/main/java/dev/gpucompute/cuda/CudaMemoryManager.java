package dev.gpucompute.cuda;

import static jcuda.driver.JCudaDriver.cuCtxEnablePeerAccess;
import static jcuda.driver.JCudaDriver.cuDeviceCanAccessPeer;
import static jcuda.driver.JCudaDriver.cuMemAllocAsync;
import static jcuda.driver.JCudaDriver.cuMemAllocHost;
import static jcuda.driver.JCudaDriver.cuMemFreeAsync;
import static jcuda.driver.JCudaDriver.cuMemFreeHost;
import static jcuda.driver.JCudaDriver.cuMemGetInfo;
import static jcuda.driver.JCudaDriver.cuMemcpyDtoDAsync;
import static jcuda.driver.JCudaDriver.cuMemcpyDtoHAsync;
import static jcuda.driver.JCudaDriver.cuMemcpyHtoDAsync;
import static jcuda.driver.JCudaDriver.cuMemcpyPeerAsync;
import static jcuda.driver.JCudaDriver.cuMemsetD8Async;
import static jcuda.driver.JCudaDriver.cuStreamSynchronize;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import dev.gpucompute.GpuContext.MemoryInfo;
import dev.gpucompute.GpuException;
import dev.gpucompute.GpuOutOfMemoryException;
import jcuda.Pointer;
import jcuda.driver.CUevent;
import jcuda.driver.JCudaDriver;

/**
 * The memory room of a {@link CudaDeviceBackend}: device allocations through a stream-aware
 * {@link CachingAllocator} (over {@code cuMemAllocAsync} when {@link AllocatorChoice} allows, else
 * {@code cuMemAlloc}), copies and fills enqueued on streams, page-locked staging buffers, and the
 * memory figures. The allocator honours {@code memoryPoolReleaseThreshold}: JCuda 12.6 has no
 * {@code cuMemPoolSetAttribute}, so CUDA's own pool keeps its threshold of 0 and gives memory back
 * at every synchronisation; the cache above it keeps what the threshold allows. Thread-safe.
 */
final class CudaMemoryManager {

	private static final Logger logger = LoggerFactory.getLogger(CudaMemoryManager.class);

	private final CudaDeviceBackend backend;

	private final CudaDeviceFacts facts;

	private final CudaAllocatorDriver driver;

	private final CachingAllocator<CudaStream, CUevent, DevicePointer> allocator;

	private final String allocatorReason;

	private final Set<CudaMemory> allocations = ConcurrentHashMap.newKeySet();

	private final Map<ByteBuffer, Pointer> staging = Collections.synchronizedMap(new IdentityHashMap<>());

	/** Peers this context reads directly, by device ordinal: true once enabled, false where not possible. */
	private final Map<Integer, Boolean> peerAccess = new ConcurrentHashMap<>();

	/**
	 * Decides the allocator (a trial stream-ordered allocation on the legacy stream) and creates the
	 * cache; the backend's context is current.
	 */
	CudaMemoryManager(CudaDeviceBackend backend, CudaDeviceFacts facts, CudaStream legacy, long releaseThreshold) {
		this.backend = backend;
		this.facts = facts;
		AllocatorChoice choice = AllocatorChoice.decide(facts.memoryPoolsSupported,
				facts.memoryPoolsSupported ? trialAllocation(legacy) : null);
		if (!choice.streamOrdered()) {
			logger.warn("CUDA device {}: {}", facts.ordinal, choice.reason());
		}
		this.allocatorReason = choice.reason();
		this.driver = new CudaAllocatorDriver(backend, choice.streamOrdered());
		this.allocator = new CachingAllocator<>(this.driver, releaseThreshold);
	}

	/** {@code cuMemAllocAsync} and {@code cuMemFreeAsync} of 256 bytes, then a synchronisation: the first failure, or success. */
	private static int trialAllocation(CudaStream legacy) {
		DevicePointer pointer = new DevicePointer();
		int result = cuMemAllocAsync(pointer, 256, legacy.handle);
		if (result != CudaErrors.SUCCESS) {
			return result;
		}
		result = cuMemFreeAsync(pointer, legacy.handle);
		int synchronized_ = JCudaDriver.cuStreamSynchronize(legacy.handle);
		return (result != CudaErrors.SUCCESS) ? result : synchronized_;
	}

	boolean streamOrderedAllocator() {
		return this.driver.streamOrdered();
	}

	/** Why this allocator (for logs and diagnostics). */
	String allocatorReason() {
		return this.allocatorReason;
	}

	CachingAllocator.Stats allocatorStats() {
		return this.allocator.stats();
	}

	long releaseThreshold() {
		return this.allocator.releaseThreshold();
	}

	/** Gives every cached block back to the driver, ordered on {@code via}; returns the bytes. */
	long releaseCached(CudaStream via) {
		this.backend.enter();
		return this.allocator.releaseCached(via);
	}

	/** A stream is about to be destroyed: its cached blocks stay reusable by other streams. */
	void streamDestroyed(CudaStream stream) {
		this.allocator.streamDestroyed(stream);
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
		CudaMemory memory = new CudaMemory(this.backend, this.allocator.allocate(bytes, stream), bytes);
		this.allocations.add(memory);
		return memory;
	}

	/** Frees after the work enqueued on {@code stream} so far: back to the cache, ordered by an event. */
	void free(CudaMemory memory, CudaStream stream) {
		if (!memory.markFreed()) {
			return;
		}
		this.allocations.remove(memory);
		if (this.backend.healthProblem() != null) {
			return; // the context is lost: its memory goes with it, and closing a buffer must not throw
		}
		this.backend.enterQuietly();
		this.allocator.free(memory.block, stream);
	}

	void copyToDevice(ByteBuffer src, CudaMemory memory, long dstOffset, long bytes, CudaStream stream) {
		checkHost(src, bytes, "copyToDevice source");
		checkRange(memory, dstOffset, bytes, "copyToDevice");
		if (bytes == 0) {
			return;
		}
		this.backend.enter();
		int result = cuMemcpyHtoDAsync(memory.at(dstOffset), hostPointer(src), bytes, stream.handle);
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
		int result = cuMemcpyDtoHAsync(hostPointer(dst), memory.at(srcOffset), bytes, stream.handle);
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

	/**
	 * Copies from a buffer of another CUDA device with {@code cuMemcpyPeerAsync} between the two
	 * primary contexts: device to device when they have peer access (enabled here the first time the
	 * pair copies, where {@code cuDeviceCanAccessPeer} allows), staged through the host by the driver
	 * where not. Enqueued on {@code stream}, this device's.
	 */
	void copyFromPeer(CudaDeviceBackend peer, CudaMemory from, long srcOffset, CudaMemory to, long dstOffset, long bytes,
			CudaStream stream) {
		checkRange(from, srcOffset, bytes, "copyFromPeer source");
		checkRange(to, dstOffset, bytes, "copyFromPeer destination");
		if (bytes == 0) {
			return;
		}
		this.backend.enter();
		enablePeerAccess(peer);
		int result = cuMemcpyPeerAsync(to.at(dstOffset), this.backend.cudaContext(), from.at(srcOffset),
				peer.cudaContext(), bytes, stream.handle);
		if (result != CudaErrors.SUCCESS) {
			throw this.backend.streamFailure(result, "cuMemcpyPeerAsync", stream);
		}
	}

	boolean hasPeerAccess(CudaDeviceBackend peer) {
		return this.peerAccess.getOrDefault(peer.ordinal(), false);
	}

	/**
	 * Enables this context's access to {@code peer}'s memory once; the caller has entered the backend.
	 * The first time, it may wait for another thread enabling it and it logs, either of which may move
	 * a virtual thread to another carrier: the context is made current again for the driver calls that
	 * follow.
	 */
	private void enablePeerAccess(CudaDeviceBackend peer) {
		if (peer.ordinal() == this.facts.ordinal || this.peerAccess.containsKey(peer.ordinal())) {
			return;
		}
		this.peerAccess.computeIfAbsent(peer.ordinal(), (ordinal) -> {
			this.backend.enter(); // cuCtxEnablePeerAccess acts on the current context
			int[] can = new int[1];
			if (cuDeviceCanAccessPeer(can, this.backend.cudaDevice(), peer.cudaDevice()) != CudaErrors.SUCCESS || can[0] == 0) {
				logger.info("CUDA devices {} and {} have no peer access: copies between them are staged through the host",
						this.facts.ordinal, ordinal);
				return false;
			}
			int result = cuCtxEnablePeerAccess(peer.cudaContext(), 0);
			boolean enabled = result == CudaErrors.SUCCESS || result == CudaErrors.PEER_ACCESS_ALREADY_ENABLED;
			logger.info("CUDA device {} {} peer access to device {}{}", this.facts.ordinal, enabled ? "has" : "could not get",
					ordinal, enabled ? "" : ": " + CudaErrors.describe(result));
			return enabled;
		});
		this.backend.enter();
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

	/**
	 * The driver's pointer to a direct buffer's byte at its position, whatever the position and
	 * wherever the buffer starts in its allocation (a host buffer's region from an offset is a slice).
	 * JCuda's native side resolves a buffer pointer as {@code GetDirectBufferAddress(buffer)} (the
	 * buffer's first byte, not its position) plus the pointer's byte offset. A slice starts at the
	 * position, so its address is the byte wanted with no offset, and nothing depends on whether a
	 * JCuda version honours positions; it costs what {@code to(buffer).withByteOffset(position)} did
	 * (two objects per copy).
	 */
	static Pointer hostPointer(ByteBuffer buffer) {
		return Pointer.to(buffer.slice());
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
		this.backend.enterQuietly();
		int result = cuMemFreeHost(host);
		if (result != CudaErrors.SUCCESS) {
			throw this.backend.failure(result, "cuMemFreeHost", null, null);
		}
	}

	// ---------------------------------------------------------------- figures and close

	MemoryInfo memoryInfo() {
		CachingAllocator.Stats stats = this.allocator.stats();
		try {
			this.backend.enterQuietly();
			long[] free = new long[1];
			long[] total = new long[1];
			if (cuMemGetInfo(free, total) == CudaErrors.SUCCESS) {
				return new MemoryInfo(stats.usedBytes(), free[0], total[0], stats.liveBlocks(), stats.cachedBytes());
			}
		}
		catch (GpuException ex) {
			// closed or unhealthy: report what this backend knows
		}
		return new MemoryInfo(stats.usedBytes(), 0, this.facts.info.totalMemoryBytes(), stats.liveBlocks(),
				stats.cachedBytes());
	}

	/**
	 * Frees every device allocation (in use or cached) and staging buffer still open, without
	 * throwing (backend close, after the device was synchronised).
	 * @return how many device buffers and staging buffers were left
	 */
	int[] freeAll() {
		int leftBuffers = 0;
		for (CudaMemory memory : List.copyOf(this.allocations)) {
			if (memory.markFreed()) {
				leftBuffers++;
				this.driver.freeAtClose(memory.pointer);
				if (memory.block.event != null) {
					this.driver.destroyEvent(memory.block.event);
				}
			}
		}
		this.allocations.clear();
		for (CachingAllocator.Block<CudaStream, CUevent, DevicePointer> block : this.allocator.drainCached()) {
			this.driver.freeAtClose(block.pointer);
			// A cached block was freed, so it has its event (JCuda throws NullPointerException for a null one too).
			this.driver.destroyEvent(Objects.requireNonNull(block.event, "event of a cached block"));
		}
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
