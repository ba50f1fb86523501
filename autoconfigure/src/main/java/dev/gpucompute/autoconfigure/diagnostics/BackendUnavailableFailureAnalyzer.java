package dev.gpucompute.autoconfigure.diagnostics;

import org.jspecify.annotations.Nullable;
import org.springframework.boot.diagnostics.FailureAnalysis;

import dev.gpucompute.Backend;
import dev.gpucompute.BackendUnavailableException;
import dev.gpucompute.autoconfigure.DeviceOrdinalOutOfRangeException;
import dev.gpucompute.spi.BackendProvider;
import dev.gpucompute.spi.Backends;

/**
 * Explains a backend that was required but cannot run here, typically {@code gpu.backend=cuda} on
 * a machine without the NVIDIA driver or without a visible GPU.
 */
class BackendUnavailableFailureAnalyzer extends GpuFailureAnalyzer<BackendUnavailableException> {

	@Override
	protected @Nullable FailureAnalysis analyze(Throwable rootFailure, BackendUnavailableException cause) {
		if (cause instanceof DeviceOrdinalOutOfRangeException) {
			return null;
		}
		String backend = cause.backend().name().toLowerCase(java.util.Locale.ROOT);
		String description = "The " + cause.backend() + " backend was required (gpu.backend=" + backend
				+ ") but cannot be used on this machine: " + reason(cause) + ".";
		String action;
		String missingNatives = missingDependency(cause.backend());
		if (missingNatives != null) {
			description += "\n\n" + missingNatives + ".";
			action = "Add JCuda's natives for this platform (see above; the starter brings JCuda's classes, not its "
					+ "platform-specific natives). To run without a GPU, set gpu.backend=auto, which falls back to the "
					+ "CPU backend, or gpu.backend=cpu.";
		}
		else if (cause.backend() == Backend.CUDA) {
			action = "Make a CUDA device usable by this process: install the NVIDIA driver (nvidia-smi must list the "
					+ "GPU), expose the GPU to the container (for example 'docker run --gpus all'), and check that "
					+ "CUDA_VISIBLE_DEVICES does not hide it. To run without a GPU, set gpu.backend=auto, which "
					+ "falls back to the CPU backend, or gpu.backend=cpu.";
		}
		else {
			action = "Set gpu.backend=auto or gpu.device=0.";
		}
		return new FailureAnalysis(description, action, cause);
	}

	/** What the backend's provider says the application lacks (JCuda's natives), or {@code null}. */
	private static @Nullable String missingDependency(Backend backend) {
		BackendProvider provider = Backends.provider(backend);
		return (provider != null) ? provider.missingDependency() : null;
	}

	private static String reason(BackendUnavailableException cause) {
		String message = String.valueOf(cause.getMessage());
		String prefix = cause.backend() + " backend is unavailable: ";
		return message.startsWith(prefix) ? message.substring(prefix.length()) : message;
	}

}
