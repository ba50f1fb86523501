package dev.gpucompute.internal.memory;

import dev.gpucompute.DeviceBuffer;
import dev.gpucompute.GpuContext.HostMemoryInfo;
import dev.gpucompute.GpuStream;
import dev.gpucompute.HostBuffer;
import dev.gpucompute.InvalidBufferRangeException;
import dev.gpucompute.internal.core.Captures;
import dev.gpucompute.internal.core.ContextCompletions;
import dev.gpucompute.internal.core.GraphUse;
import dev.gpucompute.internal.core.ContextState;
import dev.gpucompute.internal.core.LeakRegistry;
import dev.gpucompute.internal.core.Leaks;
import dev.gpucompute.internal.stream.Events;
import dev.gpucompute.internal.stream.StreamHandle;
import dev.gpucompute.internal.stream.Streams;
import dev.gpucompute.settings.CopySettings;
import dev.gpucompute.settings.InvalidSettingException;
import dev.gpucompute.spi.DeviceBackend;
import dev.gpucompute.spi.NativeMemory;
import dev.gpucompute.spi.NativeStream;

/**
 * The memory room of one context, as the other rooms see it: allocates device buffers on a stream
 * and host buffers from the pool, gives the launch path a buffer's backend memory, and at close
 * releases what callers left open. Its device buffers, host buffers and copies get from it what they
 * share (the backend, the context's lifecycle, completions, events and streams, the copy pipeline).
 * Thread-safe.
 */
public final class Memory {

	final ContextState lifecycle;

	final DeviceBackend backend;

	final Streams streams;

	final Events events;

	final HostMemory host;

	final CopyPipeline copies;

	private final ContextBuffers buffers = new ContextBuffers();

	private final boolean recordSites;

	/**
	 * @param lifecycle the context's
	 * @param backend allocates, copies and frees
	 * @param streams the context's streams: the current stream of copies that name none
	 * @param events orders work across streams (a buffer's first use on a stream, its free)
	 * @param completions complete the futures of copies
	 * @param stagingCacheBytes most host memory for copies kept for reuse between them
	 * @param chunkBytes bytes per chunk of a large copy
	 * @param copyThreads threads that pack and unpack chunks besides the caller
	 * @param threadPrefix the name of those threads
	 * @param stagingBudget most staging bytes copies hold at once
	 * @param stagingTimeout longest wait of a copy for staging
	 * @param recordSites whether buffers record where they were allocated (leak detection is on)
	 * @param faults called before each step of each copy ({@link CopyFaults#NONE} but in tests)
	 */
	public Memory(ContextState lifecycle, DeviceBackend backend, Streams streams, Events events,
			ContextCompletions completions, long stagingCacheBytes, long chunkBytes, int copyThreads, String threadPrefix,
			long stagingBudget, java.time.Duration stagingTimeout, boolean recordSites, CopyFaults faults) {
		this.lifecycle = lifecycle;
		this.backend = backend;
		this.streams = streams;
		this.events = events;
		this.recordSites = recordSites;
		this.host = new HostMemory(lifecycle, recordSites, new StagingPool(backend, stagingCacheBytes), chunkBytes, copyThreads, threadPrefix, stagingBudget,
				stagingTimeout);
		this.copies = new CopyPipeline(lifecycle, backend, completions, this.host, faults);
	}

	/**
	 * A device buffer of {@code bytes} bytes allocated on {@code stream}, its owning stream. The caller
	 * closes it.
	 */
	public DeviceBuffer allocate(long bytes, GpuStream stream) {
		if (bytes < 0) {
			throw new InvalidBufferRangeException("A device buffer's size must not be negative, got " + bytes + " bytes");
		}
		StreamHandle owner = StreamHandle.of(stream);
		NativeStream target = owner.use();
		this.lifecycle.ensureSame(owner.lifecycle(), "Stream ", stream.name());
		Captures captures = this.lifecycle.captures();
		if (captures.any()) {
			captures.checkAllocation(target, "Allocating a device buffer of " + bytes + " bytes");
		}
		NativeMemory memory = this.backend.allocate(bytes, target);
		DeviceBufferState state = new DeviceBufferState(this, memory, owner,
				Leaks.site(this.recordSites || LeakRegistry.active(), "Device buffer"));
		this.buffers.track(state);
		return new BufferHandle(state);
	}

	/**
	 * Checks that a staging budget holds the staging block of one chunk (its size class in the pool, up
	 * to 12.5% larger than the chunk), without which no chunked copy could ever run; before a context
	 * opens.
	 * @throws InvalidSettingException when it does not
	 */
	public static void checkStagingBudget(CopySettings copies) {
		long block = StagingPool.classSize(copies.chunkSize());
		if (copies.stagingBudget() < block) {
			throw new InvalidSettingException("stagingBudget", InvalidSettingException.Problem.TOO_SMALL, block,
					"stagingBudget (" + copies.stagingBudget() + " bytes) must hold at least one copy chunk (copyChunkSize "
							+ copies.chunkSize() + " bytes, " + block + " in staging)");
		}
	}

	/** A host buffer of {@code bytes} bytes (see {@link HostBuffer}). The caller closes it. */
	public HostBuffer allocateHost(long bytes) {
		return this.host.allocate(bytes);
	}

	/** Checks that a launch's buffer argument may be used with this context (open, not closed, same context). */
	public void checkForLaunch(DeviceBuffer buffer) {
		BufferHandle.of(buffer).memoryFor(this.lifecycle);
	}

	/**
	 * Remembers a use of {@code buffer} on {@code stream} before it is enqueued: orders it after the
	 * allocation and makes the free wait for it.
	 */
	public static void usedOn(DeviceBuffer buffer, GpuStream stream) {
		BufferHandle.of(buffer).usedOn(stream);
	}

	/**
	 * What a replay of a graph that launches with {@code buffer} must check and order: that it is
	 * still open, and its first use on the replay's stream (a capture records no such wait).
	 */
	public static GraphUse graphUse(DeviceBuffer buffer) {
		return CapturedCopies.device(BufferHandle.of(buffer).state());
	}

	/** The backend memory of a buffer whose use was checked already ({@link #checkForLaunch}). */
	public static NativeMemory nativeMemory(DeviceBuffer buffer) {
		return BufferHandle.of(buffer).nativeMemory();
	}

	/** Figures of the host memory (staging and host buffers). */
	public HostMemoryInfo hostInfo() {
		return this.host.info();
	}

	/** Close begins: copies waiting for staging, and later ones, fail with {@code reason}. */
	public void stopStaging(String reason) {
		this.host.stopStaging(reason);
	}

	/**
	 * At close, after the completions ran: the copy threads end, and host memory goes back
	 * ({@code release}: the device is idle, nothing can still read or write it).
	 */
	public void closeHost(boolean release) {
		this.host.close(release);
	}

	/** At close, after the device drained: device buffers left open are released with the device. */
	public void releaseAtClose() {
		this.buffers.releaseAtClose();
	}

	void untrack(DeviceBufferState buffer) {
		this.buffers.untrack(buffer);
	}

}
