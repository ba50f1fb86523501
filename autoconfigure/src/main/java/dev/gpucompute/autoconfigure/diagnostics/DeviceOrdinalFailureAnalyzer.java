package dev.gpucompute.autoconfigure.diagnostics;

import org.springframework.boot.diagnostics.FailureAnalysis;

import dev.gpucompute.Backend;
import dev.gpucompute.autoconfigure.DeviceOrdinalOutOfRangeException;

/** Explains a {@code gpu.device} ordinal beyond the devices present. */
class DeviceOrdinalFailureAnalyzer extends GpuFailureAnalyzer<DeviceOrdinalOutOfRangeException> {

	@Override
	protected FailureAnalysis analyze(Throwable rootFailure, DeviceOrdinalOutOfRangeException cause) {
		int count = cause.deviceCount();
		String devices = (count == 1) ? "1 device (ordinal 0)" : count + " devices (ordinals 0 to " + (count - 1) + ")";
		String description = "gpu.device is " + cause.ordinal() + ", but the " + cause.backend()
				+ " backend on this machine has " + devices + ".";
		String action;
		if (cause.backend() == Backend.CUDA) {
			action = "Set gpu.device to an ordinal from 0 to " + (count - 1) + ". nvidia-smi lists the devices; note that "
					+ "CUDA_VISIBLE_DEVICES (or a container's GPU assignment) renumbers the visible devices from 0.";
		}
		else {
			action = "The " + cause.backend() + " backend has a single device: set gpu.device=0 or remove the property.";
		}
		return new FailureAnalysis(description, action, cause);
	}

}
