package dev.gpucompute;

import java.nio.ByteBuffer;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;
import java.util.function.Supplier;

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
 * device's limits), so a bad launch fails with {@link InvalidLaunchConfigException} before it
 * reaches a driver. A failure while the kernel runs surfaces as {@link KernelLaunchException} at the
 * next synchronisation of its stream (or through {@link #completion()}).
 *
 * <p>Thread-safe. Kernels belong to the context; buffers belong to the caller, who closes them.
 */
public interface GpuLauncher {

	/** The context this launcher launches into. */
	GpuContext context();

	/**
	 * Loads (compiles where needed) a kernel, or returns the one already loaded under that name.
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

	/** Loads {@code source} on first use, then launches on the current stream. */
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
	 * @throws GpuException when called inside another group (groups do not nest) or with more
	 * branches than the pool's maximum size
	 */
	void parallel(List<? extends Consumer<GpuStream>> branches);

	/** {@link #parallel(List)} for branches that use the current stream implicitly. */
	void parallel(Runnable... branches);

	/** A future for the work enqueued on the current stream so far. */
	CompletableFuture<Void> completion();

	/** Blocks until the current stream's work is done. */
	void synchronize();

	/** Allocates device memory on the current stream. The caller closes it. */
	DeviceBuffer allocate(long bytes);

	/**
	 * Allocates host memory that copies use with no staging pass (page-locked on CUDA): the same as
	 * {@link GpuContext#allocateHost(long)}. The caller closes it.
	 */
	default HostBuffer allocateHost(long bytes) {
		return context().allocateHost(bytes);
	}

	/** Allocates a buffer on the current stream and enqueues a copy of {@code data} into it. */
	DeviceBuffer upload(float[] data);

	/** Allocates a buffer on the current stream and enqueues a copy of {@code data} into it. */
	DeviceBuffer upload(int[] data);

	/** Allocates a buffer on the current stream and enqueues a copy of {@code data}'s remaining bytes. */
	DeviceBuffer upload(ByteBuffer data);

}
