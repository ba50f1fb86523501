package dev.gpucompute.cuda;

import java.nio.file.Path;

import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import jcuda.driver.CUdevice;
import jcuda.driver.JCudaDriver;

/**
 * Loads the CUDA driver through JCuda once per process and remembers the outcome. Nothing here
 * touches {@link JCudaDriver} before {@link #init()} is called, so classes that only format or
 * map errors stay usable without a driver.
 */
final class CudaDriver {

	private static final Logger logger = LoggerFactory.getLogger(CudaDriver.class);

	/** Whether the native library loaded and {@code cuInit} succeeded. */
	private static volatile boolean ready;

	private static @Nullable State state;

	private CudaDriver() {
	}

	/**
	 * The outcome of loading the driver.
	 * @param failure why the driver is unusable, or {@code null}
	 * @param cause the exception behind {@code failure}, or {@code null}
	 * @param driverVersion {@code cuDriverGetVersion}, e.g. 13000
	 * @param broken when unusable: whether CUDA is installed here but broken (see
	 * {@link dev.gpucompute.spi.Availability#broken()}), as opposed to absent
	 */
	record State(@Nullable String failure, @Nullable Throwable cause, int driverVersion, boolean broken) {

		boolean ok() {
			return this.failure == null;
		}

	}

	/**
	 * Loads the JCuda driver binding, disables JCuda's exceptions (results are checked here) and
	 * calls {@code cuInit}. Never throws; the first outcome is kept, because JCuda's static
	 * initializer cannot be retried (a second attempt only says "Could not initialize class").
	 * Before JCuda loads its JNI library, {@link ExtractedLibraries} makes sure the copy JCuda will
	 * load from {@code java.io.tmpdir} is complete (a truncated one crashes the JVM).
	 */
	static synchronized State init() {
		if (state != null) {
			return state;
		}
		state = load(Path.of(System.getProperty("java.io.tmpdir")), DriverPresence.describe());
		if (!state.ok()) {
			if (state.broken()) {
				logger.warn("CUDA is installed here but cannot be used: {}", state.failure());
			}
			else {
				logger.debug("CUDA is unavailable: {}", state.failure());
			}
		}
		return state;
	}

	private static State load(Path tempDir, @Nullable String driverPresence) {
		ClassLoader loader = CudaDriver.class.getClassLoader();
		String libraryFile = ExtractedLibraries.fileName(loader, "JCudaDriver");
		if (libraryFile != null) {
			String problem = ExtractedLibraries.ensure(loader, tempDir, libraryFile);
			if (problem != null) {
				return new State(problem, null, 0, true);
			}
		}
		try {
			JCudaDriver.setExceptionsEnabled(false);
		}
		catch (Throwable ex) { // UnsatisfiedLinkError, NoClassDefFoundError, ExceptionInInitializerError
			NativeLoadFailure.Diagnosis diagnosis = NativeLoadFailure.classify(ex, tempDir);
			boolean broken = diagnosis.kind().broken()
					|| (driverPresence != null && diagnosis.kind() != NativeLoadFailure.Kind.JCUDA_MISSING);
			return new State(withPresence(diagnosis.reason(), broken ? driverPresence : null), ex, 0, broken);
		}
		try {
			int result = JCudaDriver.cuInit(0);
			if (result != CudaErrors.SUCCESS) {
				return new State(withPresence(initFailure(result), driverPresence), null, 0, driverPresence != null);
			}
			int[] version = new int[1];
			JCudaDriver.cuDriverGetVersion(version);
			ready = true;
			return new State(null, null, version[0], false);
		}
		catch (Throwable ex) {
			return new State("CUDA driver could not be initialised: " + ex, ex, 0, true);
		}
	}

	private static String withPresence(String reason, @Nullable String driverPresence) {
		return (driverPresence != null) ? reason + " (an NVIDIA driver is installed: " + driverPresence + ")" : reason;
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
	static @Nullable String errorString(int code) {
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
