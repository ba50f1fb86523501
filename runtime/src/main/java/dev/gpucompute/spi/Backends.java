package dev.gpucompute.spi;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.ServiceConfigurationError;
import java.util.ServiceLoader;

import dev.gpucompute.Backend;
import org.jspecify.annotations.Nullable;

/** Finds the {@link BackendProvider}s on the class path. */
public final class Backends {

	private Backends() {
	}

	/**
	 * The provider for {@code backend}, or {@code null} when none is on the class path (for CUDA:
	 * JCuda is missing).
	 */
	public static @Nullable BackendProvider provider(Backend backend) {
		for (BackendProvider provider : providers()) {
			if (provider.backend() == backend) {
				return provider;
			}
		}
		return null;
	}

	/** All providers that could be instantiated. */
	public static List<BackendProvider> providers() {
		List<BackendProvider> result = new ArrayList<>();
		ServiceLoader<BackendProvider> loader = ServiceLoader.load(BackendProvider.class, Backends.class.getClassLoader());
		var iterator = loader.iterator();
		while (true) {
			try {
				if (!iterator.hasNext()) {
					break;
				}
				result.add(iterator.next());
			}
			catch (ServiceConfigurationError | LinkageError ex) {
				// A provider whose dependencies are missing (JCuda not on the class path) is skipped.
			}
		}
		return result;
	}

	/** {@link #select(Backend, int, int)} with the CPU backend standing in for one device. */
	public static BackendSelection select(@Nullable Backend requested, int ordinal) {
		return select(requested, ordinal, 1);
	}

	/**
	 * Which backend a context opens on for a requested backend ({@code null}: automatic, CUDA when
	 * usable, else the CPU) and device ordinal, and why; touches no device beyond a probe. The CPU
	 * backend stands in for {@code cpuDevices} devices, ordinals {@code 0..cpuDevices-1}.
	 */
	public static BackendSelection select(@Nullable Backend requested, int ordinal, int cpuDevices) {
		if (requested == Backend.CPU) {
			BackendProvider cpu = Backends.provider(Backend.CPU);
			return new BackendSelection(Backend.CPU, cpu, cpuAvailability(cpu, ordinal, cpuDevices), "CPU backend requested");
		}
		BackendProvider cuda = Backends.provider(Backend.CUDA);
		Availability availability = (cuda != null) ? cuda.probe(ordinal)
				: Availability.no("JCuda is not on the class path (add org.jcuda:jcuda and jcuda-natives)");
		if (requested == Backend.CUDA) {
			return new BackendSelection(Backend.CUDA, cuda, availability, "CUDA backend requested");
		}
		if (availability.available()) {
			return new BackendSelection(Backend.CUDA, cuda, availability, "auto: CUDA device found (" + availability.reason() + ")");
		}
		BackendProvider cpu = Backends.provider(Backend.CPU);
		if (availability.broken()) {
			return new BackendSelection(Backend.CPU, cpu, cpuAvailability(cpu, ordinal, cpuDevices), "auto: falling back to CPU "
					+ "although CUDA is installed here, because it cannot be used: " + availability.reason(), true);
		}
		return new BackendSelection(Backend.CPU, cpu, cpuAvailability(cpu, ordinal, cpuDevices),
				"auto: falling back to CPU because CUDA is unavailable: " + availability.reason());
	}

	private static Availability cpuAvailability(@Nullable BackendProvider cpu, int ordinal, int cpuDevices) {
		if (ordinal < 0 || ordinal >= cpuDevices) {
			return Availability.no("the CPU backend stands in for " + cpuDevices + ((cpuDevices == 1) ? " device" : " devices")
					+ " (gpu.cpu.devices), ordinals 0 to " + (cpuDevices - 1) + "; got ordinal " + ordinal);
		}
		// The runtime registers its CPU backend itself (META-INF/services): only a broken jar lacks it.
		return Objects.requireNonNull(cpu, "the CPU backend's provider is not registered").probe(0);
	}

}
