package dev.gpucompute;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

/**
 * The configuration of a {@link GpuContext}, as {@link GpuContextBuilder#settings()} collects it:
 * what the runtime opens a context with. Immutable; the setters of the builder say what each value
 * means and its limits, and the constructor refuses what the runtime cannot open with.
 *
 * @param backend the backend asked for, or {@code null} to choose automatically
 * @param device the device ordinal
 * @param poolSize streams created up front
 * @param maxSize most streams the pool creates
 * @param acquireTimeout longest wait for a lease
 * @param defaultStream what the default stream is
 * @param leakDetectionThreshold a lease held longer than this is reported; zero for off
 * @param drainTimeout longest wait at close for work in flight
 * @param cpuThreads worker threads of the CPU backend
 * @param cpuMemoryBudget the CPU backend's memory budget in bytes; 0 for the backend's default, shared
 * by the CPU devices
 * @param memoryPoolReleaseThreshold bytes the CUDA allocator keeps cached
 * @param compileOptions extra compiler options for CUDA C kernels
 * @param kernelCacheDir where compiled kernels are cached, or {@code null}
 * @param kernelTiming which launches are timed on the device
 * @param listener told of launches, leases, batches and memory
 * @param utilizationSamplePeriod how often pooled streams are sampled; zero for off
 * @param utilizationWindow the window the utilisation averages over
 * @param stagingCacheBytes host memory for copies kept for reuse
 * @param copyChunkBytes bytes per chunk of a large copy
 * @param stagingBudgetBytes most staging memory copies hold at once
 * @param stagingTimeout longest wait of a copy for staging memory
 * @param copyThreads threads that pack and unpack chunks besides the caller
 * @param waitSpinNanos how long a waiter spins for a copy's completion; -1 for the backend's default
 * @param cpuDevices how many devices the CPU backend stands in for
 * @param kernels kernels loaded when the context opens
 * @param kernelLoadWaitThreshold a kernel load longer than this while work runs is reported
 * @param priorityLimits most streams leased at once per priority, by {@link StreamPriority#ordinal()}
 */
public record ContextSettings(Backend backend, int device, int poolSize, int maxSize, Duration acquireTimeout,
		DefaultStreamMode defaultStream, Duration leakDetectionThreshold, Duration drainTimeout, int cpuThreads,
		long cpuMemoryBudget, long memoryPoolReleaseThreshold, List<String> compileOptions, Path kernelCacheDir,
		KernelTiming kernelTiming, GpuListener listener, Duration utilizationSamplePeriod, Duration utilizationWindow,
		long stagingCacheBytes, long copyChunkBytes, long stagingBudgetBytes, Duration stagingTimeout, int copyThreads,
		long waitSpinNanos, int cpuDevices, List<KernelSource> kernels, Duration kernelLoadWaitThreshold,
		List<Integer> priorityLimits) {

	/**
	 * Checks what the runtime relies on, so that settings made without the builder fail here, naming
	 * the value, rather than later inside the runtime: nothing required is {@code null}, durations are
	 * not negative, sizes and counts are in the builder's ranges, and there is a lease limit per
	 * priority.
	 * @throws NullPointerException when a required value is {@code null}
	 * @throws IllegalArgumentException when a value is out of range
	 */
	public ContextSettings {
		if (device < 0) {
			throw new IllegalArgumentException("Device ordinal must not be negative, got " + device);
		}
		Checks.within(poolSize, 0, GpuContext.MAX_STREAMS, "poolSize");
		Checks.within(maxSize, 1, GpuContext.MAX_STREAMS, "maxSize");
		Checks.nanos(acquireTimeout, "acquireTimeout");
		java.util.Objects.requireNonNull(defaultStream, "defaultStream");
		Checks.nanos(leakDetectionThreshold, "leakDetectionThreshold");
		Checks.nanos(drainTimeout, "drainTimeout");
		Checks.within(cpuThreads, 1, Integer.MAX_VALUE, "cpuThreads");
		atLeast(cpuMemoryBudget, 0, "cpuMemoryBudget");
		atLeast(memoryPoolReleaseThreshold, 0, "memoryPoolReleaseThreshold");
		compileOptions = List.copyOf(compileOptions);
		java.util.Objects.requireNonNull(kernelTiming, "kernelTiming");
		java.util.Objects.requireNonNull(listener, "listener");
		Checks.nanos(utilizationSamplePeriod, "utilizationSamplePeriod");
		Checks.nanos(utilizationWindow, "utilizationWindow");
		atLeast(stagingCacheBytes, 0, "stagingCacheBytes");
		checkCopyChunk(copyChunkBytes);
		atLeast(stagingBudgetBytes, GpuContext.MIN_COPY_CHUNK, "stagingBudgetBytes");
		Checks.nanos(stagingTimeout, "stagingTimeout");
		Checks.within(copyThreads, 0, GpuContext.MAX_COPY_THREADS, "copyThreads");
		atLeast(waitSpinNanos, -1, "waitSpinNanos");
		Checks.within(cpuDevices, 1, GpuContext.MAX_CPU_DEVICES, "cpuDevices");
		kernels = List.copyOf(kernels);
		Checks.nanos(kernelLoadWaitThreshold, "kernelLoadWaitThreshold");
		priorityLimits = List.copyOf(priorityLimits);
		if (priorityLimits.size() != StreamPriority.values().length) {
			throw new IllegalArgumentException("priorityLimits must have one limit per StreamPriority ("
					+ StreamPriority.values().length + "), got " + priorityLimits.size());
		}
		for (int limit : priorityLimits) {
			Checks.within(limit, 1, GpuContext.MAX_STREAMS, "priorityLimits");
		}
	}

	/**
	 * The copy pipeline packs and unpacks whole elements of up to 8 bytes per chunk, so a chunk is a
	 * whole number of {@link GpuContext#MIN_COPY_CHUNK} blocks; the builder checks it when set, the
	 * settings again for whoever builds them directly.
	 */
	static long checkCopyChunk(long bytes) {
		if (bytes < GpuContext.MIN_COPY_CHUNK || bytes > GpuContext.MAX_COPY_CHUNK || bytes % GpuContext.MIN_COPY_CHUNK != 0) {
			throw new IllegalArgumentException("copyChunkSize must be a multiple of " + GpuContext.MIN_COPY_CHUNK + " between "
					+ GpuContext.MIN_COPY_CHUNK + " and " + GpuContext.MAX_COPY_CHUNK + ", got " + bytes);
		}
		return bytes;
	}

	private static void atLeast(long value, long min, String name) {
		if (value < min) {
			throw new IllegalArgumentException(name + " must be at least " + min + ", got " + value);
		}
	}

	/** The most streams leased at once at {@code priority}. */
	public int priorityLimit(StreamPriority priority) {
		return this.priorityLimits.get(priority.ordinal());
	}

	/** These settings on another device ordinal (how {@link GpuDevices} opens one context per device). */
	public ContextSettings withDevice(int ordinal) {
		return new ContextSettings(this.backend, ordinal, this.poolSize, this.maxSize, this.acquireTimeout,
				this.defaultStream, this.leakDetectionThreshold, this.drainTimeout, this.cpuThreads, this.cpuMemoryBudget,
				this.memoryPoolReleaseThreshold, this.compileOptions, this.kernelCacheDir, this.kernelTiming, this.listener,
				this.utilizationSamplePeriod, this.utilizationWindow, this.stagingCacheBytes, this.copyChunkBytes,
				this.stagingBudgetBytes, this.stagingTimeout, this.copyThreads, this.waitSpinNanos, this.cpuDevices,
				this.kernels, this.kernelLoadWaitThreshold, this.priorityLimits);
	}

	static List<Integer> limits(int[] limits) {
		return java.util.Arrays.stream(limits).boxed().toList();
	}

}
