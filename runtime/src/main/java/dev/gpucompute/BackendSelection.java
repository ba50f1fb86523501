package dev.gpucompute;

import dev.gpucompute.GpuContext.Selection;
import dev.gpucompute.spi.Availability;
import dev.gpucompute.spi.BackendProvider;
import dev.gpucompute.spi.Backends;

/**
 * Which backend a context opens on, and why: the rules behind {@link GpuContext#select}. Touches no
 * device beyond a probe; stateless.
 */
final class BackendSelection {

	private BackendSelection() {
	}

	/** See {@link GpuContext#select(Backend, int, int)}. */
	static Selection select(Backend requested, int ordinal, int cpuDevices) {
		if (requested == Backend.CPU) {
			BackendProvider cpu = Backends.provider(Backend.CPU);
			return new Selection(Backend.CPU, cpu, cpuAvailability(cpu, ordinal, cpuDevices), "CPU backend requested");
		}
		BackendProvider cuda = Backends.provider(Backend.CUDA);
		Availability availability = (cuda != null) ? cuda.probe(ordinal)
				: Availability.no("JCuda is not on the class path (add org.jcuda:jcuda and jcuda-natives)");
		if (requested == Backend.CUDA) {
			return new Selection(Backend.CUDA, cuda, availability, "CUDA backend requested");
		}
		if (availability.available()) {
			return new Selection(Backend.CUDA, cuda, availability, "auto: CUDA device found (" + availability.reason() + ")");
		}
		BackendProvider cpu = Backends.provider(Backend.CPU);
		if (availability.broken()) {
			return new Selection(Backend.CPU, cpu, cpuAvailability(cpu, ordinal, cpuDevices), "auto: falling back to CPU "
					+ "although CUDA is installed here, because it cannot be used: " + availability.reason(), true);
		}
		return new Selection(Backend.CPU, cpu, cpuAvailability(cpu, ordinal, cpuDevices),
				"auto: falling back to CPU because CUDA is unavailable: " + availability.reason());
	}

	private static Availability cpuAvailability(BackendProvider cpu, int ordinal, int cpuDevices) {
		if (ordinal < 0 || ordinal >= cpuDevices) {
			return Availability.no("the CPU backend stands in for " + cpuDevices + ((cpuDevices == 1) ? " device" : " devices")
					+ " (gpu.cpu.devices), ordinals 0 to " + (cpuDevices - 1) + "; got ordinal " + ordinal);
		}
		return cpu.probe(0);
	}

}
