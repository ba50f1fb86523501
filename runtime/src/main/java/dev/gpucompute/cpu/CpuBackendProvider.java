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
	public long defaultMemoryBudget() {
		return machineMemoryBudget();
	}

	/**
	 * The CPU backend's default memory budget per JVM: half the physical memory (the container's
	 * limit where one applies) when its buffers come from {@code calloc} through JNA, since those
	 * live outside the heap and the direct-memory limit, as device memory lives outside host memory;
	 * the maximum heap size, which is also the default {@code -XX:MaxDirectMemorySize}, when they are
	 * direct buffers.
	 */
	public static long machineMemoryBudget() {
		long heap = Runtime.getRuntime().maxMemory();
		if (!DirectMemory.outsideDirectLimit()) {
			return heap;
		}
		try {
			if (java.lang.management.ManagementFactory
				.getOperatingSystemMXBean() instanceof com.sun.management.OperatingSystemMXBean os) {
				long physical = os.getTotalMemorySize();
				if (physical > 0) {
					return Math.max(heap, physical / 2);
				}
			}
		}
		catch (RuntimeException | LinkageError ex) {
			// Not a HotSpot-style JVM: the heap size is a safe stand-in.
		}
		return heap;
	}

	/**
	 * Off-heap bytes the CPU backend holds now, over every CPU context of this JVM: device buffers
	 * and staging buffers not yet freed. For leak checks and diagnostics; a closed context holds none.
	 */
	public static long heldBytes() {
		return DirectMemory.heldBytes();
	}

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
