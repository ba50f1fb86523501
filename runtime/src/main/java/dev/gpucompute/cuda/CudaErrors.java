package dev.gpucompute.cuda;

import java.util.Map;

import dev.gpucompute.ContextClosedException;
import dev.gpucompute.GpuException;
import dev.gpucompute.GpuOutOfMemoryException;
import dev.gpucompute.KernelLaunchException;
import dev.gpucompute.UnsupportedBackendOperationException;
import jcuda.driver.CUresult;
import org.jspecify.annotations.Nullable;

/**
 * Maps {@code CUresult} codes to the {@link GpuException} family. Pure Java: nothing here loads
 * a native library ({@link CUresult} is a plain constants class), so the mapping is unit-tested
 * on machines without a driver.
 */
final class CudaErrors {

	static final int SUCCESS = CUresult.CUDA_SUCCESS;

	static final int OUT_OF_MEMORY = CUresult.CUDA_ERROR_OUT_OF_MEMORY;

	static final int NOT_READY = CUresult.CUDA_ERROR_NOT_READY;

	static final int NOT_FOUND = CUresult.CUDA_ERROR_NOT_FOUND;

	static final int PEER_ACCESS_ALREADY_ENABLED = CUresult.CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED;

	static final int NOT_SUPPORTED = CUresult.CUDA_ERROR_NOT_SUPPORTED;

	static final int INVALID_HANDLE = CUresult.CUDA_ERROR_INVALID_HANDLE;

	static final int INVALID_PTX = CUresult.CUDA_ERROR_INVALID_PTX;

	static final int INVALID_IMAGE = CUresult.CUDA_ERROR_INVALID_IMAGE;

	static final int NO_BINARY_FOR_GPU = CUresult.CUDA_ERROR_NO_BINARY_FOR_GPU;

	static final int UNSUPPORTED_PTX_VERSION = CUresult.CUDA_ERROR_UNSUPPORTED_PTX_VERSION;

	static final int LAUNCH_OUT_OF_RESOURCES = CUresult.CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES;

	static final int NO_DEVICE = CUresult.CUDA_ERROR_NO_DEVICE;

	static final int INSUFFICIENT_DRIVER = 35;

	/** Names JCuda 12.6's {@link CUresult#stringFor} does not know (newer or omitted codes). */
	private static final Map<Integer, String> EXTRA_NAMES = Map.of(35, "CUDA_ERROR_INSUFFICIENT_DRIVER", 36,
			"CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER", 225, "CUDA_ERROR_UNSUPPORTED_DEVSIDE_SYNC", 226,
			"CUDA_ERROR_CONTAINED", 402, "CUDA_ERROR_LOSSY_QUERY", 721, "CUDA_ERROR_TENSOR_MEMORY_LEAK", 913,
			"CUDA_ERROR_FUNCTION_NOT_LOADED", 914, "CUDA_ERROR_INVALID_RESOURCE_TYPE", 915,
			"CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION", 916, "CUDA_ERROR_KEY_ROTATION");

	private CudaErrors() {
	}

	/**
	 * Whether {@code code} is a sticky error: the context is corrupt and every further CUDA call in
	 * this process returns the same error (cuda.h: "the process must be terminated and relaunched").
	 */
	static boolean isSticky(int code) {
		return switch (code) {
			case 214, // ECC_UNCORRECTABLE
					220, // NVLINK_UNCORRECTABLE
					226, // CONTAINED
					700, // ILLEGAL_ADDRESS
					702, // LAUNCH_TIMEOUT
					710, // ASSERT
					714, // HARDWARE_STACK_ERROR
					715, // ILLEGAL_INSTRUCTION
					716, // MISALIGNED_ADDRESS
					717, // INVALID_ADDRESS_SPACE
					718, // INVALID_PC
					719, // LAUNCH_FAILED
					721, // TENSOR_MEMORY_LEAK
					810, // MPS_CLIENT_TERMINATED
					911 -> true; // EXTERNAL_DEVICE
			default -> false;
		};
	}

	/** The symbolic name of a code, e.g. {@code CUDA_ERROR_ILLEGAL_ADDRESS}. */
	static String name(int code) {
		String extra = EXTRA_NAMES.get(code);
		if (extra != null) {
			return extra;
		}
		String name = CUresult.stringFor(code);
		return (name == null || name.startsWith("INVALID CUresult")) ? "CUDA error " + code : name;
	}

	/**
	 * {@code NAME (code)}, plus the driver's own description when the driver is loaded, e.g.
	 * {@code CUDA_ERROR_ILLEGAL_ADDRESS (700): an illegal memory access was encountered}.
	 */
	static String describe(int code) {
		return describe(code, true);
	}

	/**
	 * Like {@link #describe(int)}; with {@code askDriver} false no driver call is made (for stream
	 * callbacks, which must not call CUDA).
	 */
	static String describe(int code, boolean askDriver) {
		String text = name(code) + " (" + code + ")";
		String driverText = askDriver ? CudaDriver.errorString(code) : null;
		return (driverText != null && !driverText.isBlank()) ? text + ": " + driverText : text;
	}

	/**
	 * The exception for a failed driver call.
	 * @param code the {@code CUresult}
	 * @param call the driver function, e.g. {@code cuLaunchKernel}
	 * @param kernel the kernel involved (the one launched, or the last one launched on the stream
	 * that reported the failure), or {@code null}
	 * @param stream the stream's name, or {@code null}
	 * @param requestedBytes the allocation size for memory calls, else 0
	 */
	static GpuException toException(int code, String call, @Nullable String kernel, @Nullable String stream,
			long requestedBytes) {
		return toException(code, call, kernel, stream, requestedBytes, true);
	}

	/** Like {@link #toException(int, String, String, String, long)}; see {@link #describe(int, boolean)}. */
	static GpuException toException(int code, String call, @Nullable String kernel, @Nullable String stream,
			long requestedBytes, boolean askDriver) {
		String what = call + " returned " + describe(code, askDriver) + hint(code);
		if (code == OUT_OF_MEMORY) {
			String where = (kernel != null) ? " (kernel '" + kernel + "'" + onStream(stream) + ")"
					: (stream != null ? " (" + onStream(stream).strip() + ")" : "");
			return new GpuOutOfMemoryException(requestedBytes, what + where);
		}
		if (kernel != null) {
			return new KernelLaunchException(kernel, (stream != null) ? stream : "?", what, null);
		}
		String message = what + ((stream != null) ? " (" + onStream(stream).strip() + ")" : "");
		if (code == NOT_SUPPORTED) {
			return new UnsupportedBackendOperationException(message);
		}
		if (code == CUresult.CUDA_ERROR_DEINITIALIZED || code == CUresult.CUDA_ERROR_CONTEXT_IS_DESTROYED) {
			return new ContextClosedException("The CUDA context is gone: " + message);
		}
		return new GpuException(message);
	}

	/** The health message for a sticky error. */
	static String stickyProblem(int code, String call, @Nullable String kernel, @Nullable String stream) {
		return stickyProblem(code, call, kernel, stream, true);
	}

	static String stickyProblem(int code, String call, @Nullable String kernel, @Nullable String stream,
			boolean askDriver) {
		StringBuilder text = new StringBuilder("CUDA context is unusable after ").append(describe(code, askDriver));
		if (kernel != null) {
			text.append(" in kernel '").append(kernel).append('\'');
		}
		if (stream != null) {
			text.append(onStream(stream));
		}
		text.append(" (reported by ").append(call).append("); every further CUDA call in this process fails. "
				+ "Restart the process to recover.");
		return text.toString();
	}

	private static String onStream(@Nullable String stream) {
		return (stream != null) ? " on stream " + stream : "";
	}

	/** A bracketed explanation of what the code usually means here, or an empty string. */
	static String hint(int code) {
		if (isSticky(code)) {
			return " [sticky error: the CUDA context is now unusable, restart the process]";
		}
		return switch (code) {
			case LAUNCH_OUT_OF_RESOURCES -> " [too many threads per block for this kernel's register or shared-memory use]";
			case CUresult.CUDA_ERROR_INVALID_VALUE -> " [an argument was out of range]";
			case NO_BINARY_FOR_GPU -> " [the image has no code for this GPU's architecture; ship PTX or a fatbin that includes it]";
			case UNSUPPORTED_PTX_VERSION -> " [the PTX is newer than the installed driver; compile for an older PTX ISA or update the driver]";
			default -> "";
		};
	}

}
