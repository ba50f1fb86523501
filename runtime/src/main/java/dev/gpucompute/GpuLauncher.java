package dev.gpucompute;

import java.util.Collection;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;
import java.util.function.Supplier;

import dev.gpucompute.listener.GpuListener;
import dev.gpucompute.listener.KernelLoad;
import org.jspecify.annotations.Nullable;

/**
 * What applications inject: loads kernels, launches them, scopes the current stream, runs
 * stream-parallel groups and allocates device memory.
 *
 * <p><b>Current stream.</b> Every thread has a current stream: the one set by
 * {@link #withStream(GpuStream, Runnable)} or {@link #useStream(GpuStream)}, else the context's
 * {@linkplain GpuContext#defaultStream() default stream}. Scopes are thread-local and always restore
 * the previous stream, also when the action throws.
 *
 * <p><b>Launches</b> are asynchronous: they enqueue work and return. Every launch is checked first
 * (argument count and types against the kernel's declared parameters, grid and block against the
 * device's limits), so a bad launch fails before it reaches a driver: with
 * {@link InvalidKernelArgumentException} for arguments, {@link InvalidLaunchConfigException} (its
 * supertype) for the configuration. An empty launch (a grid with 0 blocks, e.g.
 * {@code LaunchConfig.linear(0, 256)}) is checked the same way and then does nothing; see
 * {@link LaunchConfig}. A failure while the kernel runs surfaces as {@link KernelLaunchException} at the
 * next synchronisation of its stream (or through {@link #completion()}).
 *
 * <p><b>Copies without a stream</b> ({@code buffer.download(HostArray.of(array))}, {@code buffer.upload(hostArray)},
 * {@code buffer.fill(value)}) go to the calling thread's current stream of the buffer's context, like
 * launches without a stream: the scope's stream inside a {@link StreamScope}, else the thread's
 * default stream.
 *
 * <p>Thread-safe. Kernels belong to the context; buffers belong to the caller, who closes them.
 */
public interface GpuLauncher {

	/** The context this launcher launches into. */
	GpuContext context();

	/**
	 * Loads (compiles where needed) a kernel, or returns the one already loaded under that name. On
	 * CUDA a load waits for the work in flight on the device, so call this before work starts (or name
	 * the kernels on {@link GpuContextBuilder#kernels}); every load is reported to
	 * {@link GpuListener#kernelLoaded} and one that waited is logged at WARN (see {@link KernelLoad}).
	 * @throws KernelCompilationException when it does not compile, with the compiler log
	 * @throws GpuException when a different kernel is already loaded under the same name
	 */
	Kernel load(KernelSource source);

	/**
	 * A loaded kernel by name.
	 * @throws KernelNotFoundException when none is loaded under that name
	 */
	Kernel kernel(String name);

	/** All loaded kernels. */
	Collection<Kernel> kernels();

	/** Launches on the calling thread's current stream. */
	void launch(Kernel kernel, LaunchConfig config, Object... args);

	/**
	 * Loads {@code source} on first use, then launches on the current stream. The only launch that
	 * loads a kernel: its first launch of a kernel not loaded yet, which is logged (INFO, naming the
	 * kernel) and reported as {@link KernelLoad.Trigger#LAUNCH}; on CUDA that load waits for the work in
	 * flight on the device. Load kernels up front and later launches of them load nothing.
	 */
	void launch(KernelSource source, LaunchConfig config, Object... args);

	/** Launches on {@code stream}. */
	void launch(GpuStream stream, Kernel kernel, LaunchConfig config, Object... args);

	/** The calling thread's current stream. */
	GpuStream currentStream();

	/** Runs {@code action} with {@code stream} as the current stream, restoring the previous one after. */
	void withStream(GpuStream stream, Runnable action);

	/** Like {@link #withStream(GpuStream, Runnable)}, returning the action's result. */
	<T> T callWithStream(GpuStream stream, Supplier<T> action);

	/** Makes {@code stream} current until the returned scope is closed (try-with-resources). */
	StreamScope useStream(GpuStream stream);

	/**
	 * Runs a stream-parallel group. Each branch runs, on the calling thread, with its own pooled
	 * stream as the current stream (and as its argument), so the work the branches enqueue can
	 * overlap on the device. The branches start after the work already on the current stream (a fork
	 * event), and the current stream continues only after all of them (join events); the host does
	 * not block. Leases go back to the pool and the current stream is restored on every path; when a
	 * branch throws, the remaining branches are skipped and the first exception is rethrown.
	 * @throws GpuException when called inside another group (groups do not nest)
	 * @throws PoolTooSmallException before anything runs, when the group has more branches than the
	 * pool may lease at once at the current stream's priority (its maximum size, or that priority's
	 * limit)
	 * @throws PoolExhaustedException when the branches' streams did not become free within the pool's
	 * acquire timeout
	 */
	void parallel(List<? extends Consumer<GpuStream>> branches);

	/** {@link #parallel(List)} for branches that use the current stream implicitly. */
	void parallel(Runnable... branches);

	/** A future for the work enqueued on the current stream so far. */
	CompletableFuture<Void> completion();

	/**
	 * Allocates {@code count} elements of {@code type} on the current stream, which becomes the
	 * buffer's owning stream ({@code allocate(bytes, ElementType.BYTE)} for a size in bytes). The
	 * contents are undefined until written (zero on the CPU backend, not on CUDA): fill or upload before
	 * reading. A count of 0 gives a buffer of 0 bytes, which copies of 0 bytes and launches accept. The
	 * caller closes it.
	 * @throws InvalidBufferRangeException when {@code count} is negative or its bytes overflow
	 * @throws GpuOutOfMemoryException when the device has no room
	 */
	DeviceBuffer allocate(long count, ElementType type);

	/**
	 * Allocates host memory for copies without a staging pass: page-locked on CUDA, off-heap on the
	 * CPU backend, from the pool that staging memory comes from (its use is in
	 * {@link GpuContext#hostMemory()}). Its contents are unspecified (pooled memory is not cleared).
	 * The caller owns it and closes it; see {@link HostBuffer} for the ordering rules of copies that
	 * use it.
	 * @param bytes 0 to {@link Integer#MAX_VALUE}; a buffer of 0 bytes takes part in copies of 0 bytes
	 * @throws InvalidBufferRangeException when {@code bytes} is outside that range
	 * @throws GpuOutOfMemoryException when the memory cannot be had (page-locked memory is limited by
	 * the operating system)
	 */
	HostBuffer allocateHost(long bytes);

	/**
	 * Allocates a buffer of {@code data}'s element type and length on the current stream and enqueues a
	 * copy of {@code data} into it ({@code upload(HostArray.of(floats))}); an empty array gives a
	 * buffer of 0 bytes. The data is copied before this returns: the array may be reused at once. The
	 * caller closes the buffer. It waits for staging as {@link DeviceBuffer#upload(HostArray, long, GpuStream)} does.
	 * @throws StagingExhaustedException when it waits for staging longer than the staging timeout (the
	 * buffer is closed)
	 */
	default DeviceBuffer upload(HostArray data) {
		java.util.Objects.requireNonNull(data, "data");
		return uploaded(allocate(data.length(), data.type()), (buffer) -> buffer.upload(data, buffer.stream()));
	}

	/**
	 * Like {@link #upload(HostArray)} for all of {@code data}'s bytes, copied straight from its memory (no
	 * staging pass). Unlike an array, {@code data} is read when the copy runs: leave it unchanged until
	 * the copy has run (synchronise the current stream, or download after it), as {@link HostBuffer}
	 * says. The caller closes the device buffer.
	 */
	default DeviceBuffer upload(HostBuffer data) {
		java.util.Objects.requireNonNull(data, "data");
		return uploaded(allocate(data.byteSize(), ElementType.BYTE), (buffer) -> buffer.upload(data, buffer.stream()));
	}

	/** Runs the copy into a new buffer, closing the buffer when the copy cannot be enqueued. */
	private static DeviceBuffer uploaded(DeviceBuffer buffer, Consumer<DeviceBuffer> copy) {
		try {
			copy.accept(buffer);
			return buffer;
		}
		catch (RuntimeException | Error ex) {
			buffer.close();
			throw ex;
		}
	}

}
