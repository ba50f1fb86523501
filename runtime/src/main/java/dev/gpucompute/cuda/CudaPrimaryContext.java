package dev.gpucompute.cuda;

import static jcuda.driver.JCudaDriver.cuCtxSetCurrent;
import static jcuda.driver.JCudaDriver.cuDeviceGet;
import static jcuda.driver.JCudaDriver.cuDevicePrimaryCtxRelease;
import static jcuda.driver.JCudaDriver.cuDevicePrimaryCtxRetain;

import java.util.concurrent.atomic.AtomicLong;
import java.util.function.IntSupplier;

import dev.gpucompute.Backend;
import dev.gpucompute.BackendUnavailableException;
import dev.gpucompute.spi.HostThreads;
import jcuda.driver.CUcontext;
import jcuda.driver.CUdevice;

/**
 * A device's primary context as one {@link CudaDeviceBackend} holds it: retained once when the
 * backend opens, released when it closes, and made current on each host thread that uses the
 * backend.
 *
 * <p>Owns the retained context and the per-thread record of whose context a thread last made
 * current, so that the hot path makes no driver call when it already is. A CUDA context is current
 * on an OS thread ({@code cuCtxSetCurrent} binds it to the calling CPU thread), and a virtual thread
 * can move to another carrier thread whenever it waits (for a monitor from Java 24 on, in a park on
 * any version), so for a virtual thread the record proves nothing: the context is set on every
 * call, and set again after a wait that sits between a call's entry and its next driver call (the
 * backend's callers do so: {@code CudaDeviceBackend.resume()}).
 *
 * <p>Thread-safe: the record is thread-local and the handles do not change after the retain. The
 * driver calls are injected ({@code cuCtxSetCurrent} and {@code cuDevicePrimaryCtxRelease} in
 * {@link #retain}), so the record's rules can be checked without a driver.
 */
final class CudaPrimaryContext {

	private static final AtomicLong IDS = new AtomicLong();

	/**
	 * Per host thread: [0] the id of the context holder this thread last made current; [1] 1 when
	 * the thread is virtual.
	 */
	private static final ThreadLocal<long[]> CURRENT = ThreadLocal
		.withInitial(() -> new long[] { 0, isVirtual(Thread.currentThread()) ? 1 : 0 });

	private final long id = IDS.incrementAndGet();

	private final CUdevice device;

	private final CUcontext context;

	private final IntSupplier setCurrent;

	private final IntSupplier release;

	/**
	 * @param device the device, or {@code null} in tests
	 * @param context its retained primary context, or {@code null} in tests
	 * @param setCurrent makes {@code context} current on the calling thread, returning the driver's code
	 * @param release releases the retained context, returning the driver's code
	 */
	CudaPrimaryContext(CUdevice device, CUcontext context, IntSupplier setCurrent, IntSupplier release) {
		this.device = device;
		this.context = context;
		this.setCurrent = setCurrent;
		this.release = release;
	}

	/**
	 * Retains the primary context of device {@code ordinal} (after {@link CudaDriver#init()}).
	 * @throws BackendUnavailableException when the device cannot be opened or its context retained
	 */
	static CudaPrimaryContext retain(int ordinal) {
		CUdevice device = new CUdevice();
		int result = cuDeviceGet(device, ordinal);
		if (result != CudaErrors.SUCCESS) {
			throw new BackendUnavailableException(Backend.CUDA,
					"device " + ordinal + " could not be opened: cuDeviceGet returned " + CudaErrors.describe(result), null);
		}
		CUcontext context = new CUcontext();
		result = cuDevicePrimaryCtxRetain(context, device);
		if (result != CudaErrors.SUCCESS) {
			throw new BackendUnavailableException(Backend.CUDA, "the primary context of device " + ordinal
					+ " could not be retained: " + CudaErrors.describe(result), null);
		}
		return new CudaPrimaryContext(device, context, () -> cuCtxSetCurrent(context),
				() -> cuDevicePrimaryCtxRelease(device));
	}

	CUdevice device() {
		return this.device;
	}

	CUcontext context() {
		return this.context;
	}

	/**
	 * Makes the context current on the calling thread whatever the record says (at open), and
	 * records it when that worked.
	 * @return the driver's code
	 */
	int setCurrent() {
		int result = this.setCurrent.getAsInt();
		if (result == CudaErrors.SUCCESS) {
			CURRENT.get()[0] = this.id;
		}
		return result;
	}

	/**
	 * Makes the context current on the calling thread unless the record says it already is (then no
	 * driver call is made); on a virtual thread, always.
	 * @return {@link CudaErrors#SUCCESS}, or the driver's code when setting it failed (nothing is
	 * recorded then)
	 */
	int makeCurrent() {
		long[] current = CURRENT.get();
		if (current[0] != this.id || current[1] != 0) {
			int result = this.setCurrent.getAsInt();
			if (result != CudaErrors.SUCCESS) {
				return result;
			}
			current[0] = this.id;
		}
		return CudaErrors.SUCCESS;
	}

	/** Whether the calling thread is virtual (decided once per thread). */
	boolean onVirtualThread() {
		return CURRENT.get()[1] != 0;
	}

	/**
	 * Releases the retained context; the calling thread's record then names no context, so the next
	 * holder used on it sets its own.
	 * @return the driver's code
	 */
	int release() {
		int result = this.release.getAsInt();
		CURRENT.get()[0] = 0;
		return result;
	}

	/** Whether {@code thread} is a virtual thread; always {@code false} before Java 21. */
	static boolean isVirtual(Thread thread) {
		return HostThreads.isVirtual(thread);
	}

	/**
	 * Runs {@code work} on a new platform thread named {@code name} and waits for it, for a sequence of
	 * driver calls with waits between them (a backend's close) called on a virtual thread: a platform
	 * thread stays on its OS thread, so a context made current there at the start stays current. The
	 * wait is not interruptible (the work releases what it began to); an interrupt is kept for the
	 * caller. What {@code work} throws is thrown here.
	 */
	static void onPlatformThread(String name, Runnable work) {
		Throwable[] thrown = new Throwable[1];
		Thread thread = new Thread(() -> {
			try {
				work.run();
			}
			catch (Throwable ex) {
				thrown[0] = ex;
			}
		}, name);
		thread.setDaemon(true);
		thread.start();
		boolean interrupted = false;
		while (true) {
			try {
				thread.join();
				break;
			}
			catch (InterruptedException ex) {
				interrupted = true;
			}
		}
		if (interrupted) {
			Thread.currentThread().interrupt();
		}
		if (thrown[0] instanceof RuntimeException runtime) {
			throw runtime;
		}
		if (thrown[0] instanceof Error error) {
			throw error;
		}
	}

}
