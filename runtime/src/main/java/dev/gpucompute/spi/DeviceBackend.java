package dev.gpucompute.spi;

import java.nio.ByteBuffer;

import dev.gpucompute.DeviceInfo;
import dev.gpucompute.GpuContext.MemoryInfo;
import dev.gpucompute.KernelSource;
import dev.gpucompute.LaunchConfig;
import dev.gpucompute.StreamPriority;
import dev.gpucompute.settings.DefaultStreamMode;
import org.jspecify.annotations.Nullable;

/**
 * One open device. Owned by exactly one {@code GpuContext}, which closes it last.
 */
public interface DeviceBackend extends AutoCloseable {

	DeviceInfo info();

	/**
	 * Creates a non-blocking stream.
	 * @param name a label used in error messages
	 */
	NativeStream createStream(StreamPriority priority, String name);

	/**
	 * The default stream for the calling thread in the given mode: the same object every time for
	 * {@link DefaultStreamMode#LEGACY}, one per thread for {@link DefaultStreamMode#PER_THREAD}.
	 * Default streams are never destroyed by the caller.
	 */
	NativeStream defaultStream(DefaultStreamMode mode);

	/** Creates an event, with timing when {@code timing} is true. */
	NativeEvent createEvent(boolean timing);

	/**
	 * Compiles or loads a kernel. The CPU backend accepts kernels without a CPU implementation here
	 * and rejects them at launch.
	 * @throws dev.gpucompute.KernelCompilationException with the compiler log
	 */
	NativeKernel loadKernel(KernelSource source);

	/**
	 * Enqueues a launch. {@code args} were checked against the kernel's declared parameters; buffer
	 * arguments are given as {@link NativeMemory}. The backend must not keep {@code args} beyond this
	 * call (copy if the launch runs later).
	 */
	void launch(NativeKernel kernel, LaunchConfig config, LaunchArgs args, NativeStream stream);

	/**
	 * Refuses a kernel that this backend cannot run, as {@link #launch} would; for launches that never
	 * reach {@link #launch} (an empty grid). Nothing is enqueued.
	 * @throws dev.gpucompute.UnsupportedBackendOperationException when the kernel has no body for this backend
	 */
	default void checkLaunchable(NativeKernel kernel) {
	}

	/**
	 * Begins capturing the work enqueued on {@code stream} (a stream from {@link #createStream}) into
	 * a graph: from now on that work, and the work of streams that join the capture through events
	 * recorded in it, is recorded instead of run, until {@link NativeCapture#end()} or
	 * {@link NativeCapture#abort()}. Other threads' work on other streams goes on undisturbed, and
	 * {@link #synchronizeDevice()} and {@link #awaitIdle} must not break the capture (on CUDA they wait
	 * without synchronising the context while one is open). The context has checked that neither the
	 * thread nor the stream captures already. The default refuses.
	 * @throws dev.gpucompute.UnsupportedBackendOperationException when this backend cannot capture
	 */
	default NativeCapture beginCapture(NativeStream stream) {
		throw new dev.gpucompute.UnsupportedBackendOperationException("The " + info().backend()
				+ " backend cannot capture graphs");
	}

	/** Allocates device memory, stream-ordered on {@code stream}; 0 bytes gives an allocation of size 0. */
	NativeMemory allocate(long bytes, NativeStream stream);

	/** Frees device memory, stream-ordered on {@code stream}: after all work enqueued there so far. */
	void free(NativeMemory memory, NativeStream stream);

	/**
	 * Copies {@code bytes} from host memory to the device, enqueued on {@code stream}. {@code src} is
	 * a staging buffer from {@link #allocateStaging}; it is read when the copy runs, between its
	 * position and limit.
	 */
	void copyToDevice(ByteBuffer src, NativeMemory dst, long dstOffset, long bytes, NativeStream stream);

	/** Copies device memory to a staging buffer from {@link #allocateStaging}, enqueued on {@code stream}. */
	void copyToHost(NativeMemory src, long srcOffset, ByteBuffer dst, long bytes, NativeStream stream);

	/** Copies device to device, enqueued on {@code stream}. */
	void copyDeviceToDevice(NativeMemory src, long srcOffset, NativeMemory dst, long dstOffset, long bytes,
			NativeStream stream);

	/**
	 * Copies from memory of another device of the same backend kind ({@code source}, opened by the
	 * same provider) into this device's memory, enqueued on {@code stream} (this device's). Ordering
	 * against {@code source}'s work is the caller's (an event of that device waited on by
	 * {@code stream}).
	 * @throws dev.gpucompute.UnsupportedBackendOperationException when this backend cannot copy between
	 * devices
	 */
	default void copyFromPeer(DeviceBackend source, NativeMemory src, long srcOffset, NativeMemory dst, long dstOffset,
			long bytes, NativeStream stream) {
		throw new dev.gpucompute.UnsupportedBackendOperationException("Copies between devices are not supported by the "
				+ info().backend() + " backend");
	}

	/** Sets {@code bytes} bytes to {@code value}, enqueued on {@code stream}. */
	void fill(NativeMemory dst, long offset, long bytes, byte value, NativeStream stream);

	/**
	 * Host memory that asynchronous copies can use (page-locked on CUDA, direct on CPU), in native
	 * byte order. Released with {@link #freeStaging}.
	 */
	ByteBuffer allocateStaging(long bytes);

	void freeStaging(ByteBuffer staging);

	MemoryInfo memoryInfo();

	/**
	 * Blocks until all work on every stream of this device is done ({@code cuCtxSynchronize}). Used
	 * at shutdown and in rare cross-thread cases; never on the launch path. Must not break a capture
	 * open on another thread: it then waits for the streams that do not capture (what a capturing
	 * stream records does not run).
	 */
	void synchronizeDevice();

	/**
	 * Waits up to {@code timeoutNanos} for the work enqueued so far on every stream of this device
	 * to finish, and for the {@link NativeStream#whenDone} callbacks of that work to have run, without
	 * reporting failures. Streams destroyed while their work still ran count too (see
	 * {@link NativeStream#destroy}). Used by the context's drain and close; never blocks past the
	 * timeout (a runaway kernel must not hang shutdown). The callbacks matter: close abandons every
	 * completion still waiting for one once this returns, so a backend that learns of finished work
	 * late (by polling) must catch up before it answers {@code true}. An idle device is idle at any
	 * timeout: with none left (0, or a drain budget that the batchers used up) the backend still looks
	 * once, without waiting, and answers {@code true} when nothing runs and no callback is left to run.
	 * @return whether all of it finished, and its callbacks ran, in time
	 */
	boolean awaitIdle(long timeoutNanos);

	/**
	 * Gives up on the work still pending at close, after {@link #awaitIdle} timed out: queued work
	 * is not started, and threads blocked in this backend's synchronisations return by throwing
	 * {@code reason}. Called at most once, before {@link #close()}.
	 * @return whether no work of this backend can still read or write memory (the context then
	 * frees it); {@code false} when something still runs that cannot be stopped (a CUDA kernel, a
	 * CPU kernel that ignores interrupts), and memory is then left to the process
	 */
	boolean abandon(dev.gpucompute.GpuException reason);

	/**
	 * A thread starts waiting for a callback registered with {@link NativeStream#whenDone}; each call
	 * is followed by one {@link #completionWaitEnded()}. A backend that polls for completions should
	 * poll at once, and closely while any thread waits, as a driver's synchronise spins for its
	 * caller. Called from any thread, often; must be cheap and never block. The default does nothing
	 * (a backend that runs its callbacks as work ends).
	 */
	default void completionWaitStarted() {
	}

	/** The wait that {@link #completionWaitStarted()} announced is over (done, timed out or interrupted). */
	default void completionWaitEnded() {
	}

	/**
	 * How this backend compiles CUDA C and how it obtained its kernels' code so far (compiled, from a
	 * cache, prebuilt), or {@code null} for a backend that compiles nothing (the CPU backend, the
	 * default). For diagnostics and benchmarks; may look for the compiler on first use, so not for a
	 * launch path. Called from any thread.
	 */
	default @Nullable KernelCompilation kernelCompilation() {
		return null;
	}

	/**
	 * A sticky failure that left the device unusable (illegal address on CUDA), or {@code null} while
	 * the device is healthy.
	 */
	@Nullable String healthProblem();

	/**
	 * Releases the device. Called once, after every stream and event has been destroyed; memory still
	 * allocated (buffers left open at close) is released here, unless {@link #abandon} reported work
	 * still running.
	 */
	@Override
	void close();

}
