package dev.gpucompute.autoconfigure.diagnostics;

import org.springframework.boot.diagnostics.FailureAnalysis;

import dev.gpucompute.Backend;
import dev.gpucompute.autoconfigure.DeviceOrdinalOutOfRangeException;
import dev.gpucompute.settings.CpuSettings;

/**
 * Explains a {@code gpu.device} ordinal, or an ordinal of {@code gpu.devices}, beyond the devices
 * present, with where it was set.
 */
class DeviceOrdinalFailureAnalyzer extends GpuFailureAnalyzer<DeviceOrdinalOutOfRangeException> {

	@Override
	protected FailureAnalysis analyze(Throwable rootFailure, DeviceOrdinalOutOfRangeException cause) {
		int count = cause.deviceCount();
		String devices = (count == 1) ? "1 device (ordinal 0)" : count + " devices (ordinals 0 to " + (count - 1) + ")";
		boolean list = "gpu.devices".equals(cause.property());
		StringBuilder description = new StringBuilder(cause.property())
			.append(list ? " lists device " : " is ")
			.append(cause.ordinal());
		if (cause.origin() != null) {
			description.append(" (").append(cause.origin()).append(')');
		}
		description.append(", but the ").append(cause.backend()).append(" backend on this machine has ").append(devices)
			.append('.');
		String action;
		if (cause.backend() == Backend.CUDA) {
			action = (list ? "List only ordinals from 0 to " + (count - 1) + " in gpu.devices, or set gpu.devices=all."
					: "Set gpu.device to an ordinal from 0 to " + (count - 1) + ".")
					+ " nvidia-smi lists the devices; note that CUDA_VISIBLE_DEVICES (or a container's GPU assignment) "
					+ "renumbers the visible devices from 0.";
		}
		else if (list) {
			action = "The " + cause.backend() + " backend stands in for gpu.cpu.devices devices (" + count + " here): "
					+ "list only ordinals from 0 to " + (count - 1) + " in gpu.devices, set gpu.devices=all, or raise "
					+ "gpu.cpu.devices to at least " + (cause.ordinal() + 1) + " (at most " + CpuSettings.MAX_DEVICES
					+ ").";
		}
		else if (count == 1) {
			action = "The " + cause.backend() + " backend has a single device unless gpu.cpu.devices says otherwise: "
					+ "set gpu.device=0 or remove the property, or raise gpu.cpu.devices.";
		}
		else {
			action = "The " + cause.backend() + " backend stands in for gpu.cpu.devices devices (" + count + " here): "
					+ "set gpu.device to an ordinal from 0 to " + (count - 1) + ", or raise gpu.cpu.devices.";
		}
		return new FailureAnalysis(description.toString(), action, cause);
	}

}
