package dev.gpucompute.cuda;

import jcuda.driver.CUdevice;
import jcuda.driver.JCudaDriver;

/**
 * Loads the CUDA driver through JCuda once per process and remembers the outcome. Nothing here
 * touches {@link JCudaDriver} before {@link #init()} is called, so classes that only format or
 * map errors stay usable without a driver.
 */
final class CudaDriver {

	/** Whether the native library loaded and {@code cuInit} succeeded. */
	private static volatile boolean ready;

	private static State state;

	private CudaDriver() {
	}

	/**
	 * The outcome of loading the driver.
	 * @param failure why the driver is unusable, or {@code null}
	 * @param cause the exception behind {@code failure}, or {@code null}
	 * @param driverVersion {@code cuDriverGetVersion}, e.g. 13000
	 */
	record State(String failure, Throwable cause, int driverVersion) {

		boolean ok() {
			return this.failure == null;
		}

	}

	/**
	 * Loads the JCuda driver binding, disables JCuda's exceptions (results are checked here) and
	 * calls {@code cuInit}. Never throws; the first outcome is kept, because JCuda's static
	 * initializer cannot be retried (a second attempt only says "Could not initialize class").
	 */
	static synchronized State init() {
		if (state != null) {
			return state;
		}
		try {
			JCudaDriver.setExceptionsEnabled(false);
		}
		catch (NoClassDefFoundError ex) {
			String message = String.valueOf(ex.getMessage());
			state = message.startsWith("Could not initialize class") // someone else's load attempt failed first
					? new State("CUDA driver library (libcuda.so) could not be loaded: " + CudaFormat.linkFailure(ex), ex, 0)
					: new State("JCuda (org.jcuda:jcuda and its natives) is not on the class path: " + message, ex, 0);
			return state;
		}
		catch (Throwable ex) { // UnsatisfiedLinkError, ExceptionInInitializerError
			state = new State("CUDA driver library (libcuda.so) could not be loaded: " + CudaFormat.linkFailure(ex), ex, 0);
			return state;
		}
		try {
			int result = JCudaDriver.cuInit(0);
			if (result != CudaErrors.SUCCESS) {
				state = new State(initFailure(result), null, 0);
				return state;
			}
			int[] version = new int[1];
			JCudaDriver.cuDriverGetVersion(version);
			state = new State(null, null, version[0]);
			ready = true;
		}
		catch (Throwable ex) {
			state = new State("CUDA driver could not be initialised: " + ex, ex, 0);
		}
		return state;
	}

	private static String initFailure(int result) {
		if (result == CudaErrors.NO_DEVICE) {
			return "no CUDA device (cuInit returned " + CudaErrors.name(result) + ")";
		}
		if (result == CudaErrors.INSUFFICIENT_DRIVER) {
			return "the installed NVIDIA driver is older than the CUDA version JCuda was built for (cuInit returned "
					+ CudaErrors.name(result) + ")";
		}
		return "cuInit failed: " + CudaErrors.describe(result);
	}

	/** Whether the driver is loaded and initialised. */
	static boolean ready() {
		return ready;
	}

	/** The driver's description of a code, or {@code null} when the driver is not loaded. */
	static String errorString(int code) {
		if (!ready) {
			return null;
		}
		try {
			String[] text = new String[1];
			if (JCudaDriver.cuGetErrorString(code, text) == CudaErrors.SUCCESS) {
				return text[0];
			}
		}
		catch (Throwable ex) {
			// fall through: no description
		}
		return null;
	}

	/** An integer device attribute; throws {@link dev.gpucompute.GpuException} on failure. */
	static int attribute(CUdevice device, int attribute) {
		int[] value = new int[1];
		check(JCudaDriver.cuDeviceGetAttribute(value, attribute, device), "cuDeviceGetAttribute(" + attribute + ")");
		return value[0];
	}

	/** Throws the mapped exception when {@code result} is not success. */
	static void check(int result, String call) {
		if (result != CudaErrors.SUCCESS) {
			throw CudaErrors.toException(result, call, null, null, 0);
		}
	}

}
