package dev.gpucompute.cpu;

import dev.gpucompute.Backend;
import dev.gpucompute.BackendUnavailableException;
import dev.gpucompute.spi.Availability;
import dev.gpucompute.spi.BackendConfig;
import dev.gpucompute.spi.BackendProvider;
import dev.gpucompute.spi.DeviceBackend;

/** Provides the CPU backend, available on every machine as device 0. */
public final class CpuBackendProvider implements BackendProvider {

	@Override
	public Backend backend() {
		return Backend.CPU;
	}

	@Override
	public Availability probe(int ordinal) {
		if (ordinal != 0) {
			return Availability.no("the CPU backend has one device, ordinal 0; got " + ordinal);
		}
		return Availability.yes("CPU backend with " + Runtime.getRuntime().availableProcessors() + " cores");
	}

	/**
	 * {@inheritDoc}
	 * <p>Any non-negative ordinal opens: the CPU backend stands in for as many devices as the
	 * application asks for ({@code gpu.cpu.devices}, checked by {@code GpuContext}), each with its
	 * own workers and memory budget.
	 */
	@Override
	public DeviceBackend open(BackendConfig config) {
		if (config.ordinal() < 0) {
			throw new BackendUnavailableException(Backend.CPU, "device ordinal " + config.ordinal() + " is negative", null);
		}
		if (config.cpuThreads() < 1) {
			throw new IllegalArgumentException("CPU backend needs at least 1 worker thread, got " + config.cpuThreads());
		}
		return new CpuDeviceBackend(config);
	}

}
