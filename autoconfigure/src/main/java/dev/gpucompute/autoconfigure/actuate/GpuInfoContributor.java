package dev.gpucompute.autoconfigure.actuate;

import org.springframework.boot.actuate.info.Info;
import org.springframework.boot.actuate.info.InfoContributor;

import dev.gpucompute.Backend;
import dev.gpucompute.DeviceInfo;
import dev.gpucompute.GpuContext;

/**
 * Adds {@code gpu} to {@code /actuator/info}: backend, device name, ordinal, UUID, compute capability,
 * driver version, the gpu-compute runtime version and the device's memory and multiprocessors.
 * Values that never change while the application runs; live figures are in the {@code gpu}
 * endpoint.
 */
public class GpuInfoContributor implements InfoContributor {

	private final GpuContext context;

	/**
	 * An info contributor describing {@code context}'s device.
	 * @param context the context to describe
	 */
	public GpuInfoContributor(GpuContext context) {
		this.context = context;
	}

	@Override
	public void contribute(Info.Builder builder) {
		DeviceInfo device = this.context.device();
		builder.withDetail("gpu",
				new GpuInfo(device.backend(), device.name(), device.ordinal(), device.uuid(), device.pciBusId(),
						device.computeCapability(), device.driverVersion(), runtimeVersion(), device.multiprocessors(),
						device.totalMemoryBytes()));
	}

	private static String runtimeVersion() {
		// From the runtime jar's manifest; absent when running from classes (IDE, this build's tests).
		return GpuContext.class.getPackage().getImplementationVersion();
	}

	/**
	 * What {@code /actuator/info} shows under {@code gpu}.
	 *
	 * @param backend the backend in use
	 * @param device the device's name
	 * @param ordinal the device ordinal
	 * @param uuid the device UUID
	 * @param pciBusId the PCI bus id (empty on the CPU backend)
	 * @param computeCapability {@code major.minor} on CUDA, empty on the CPU backend
	 * @param driverVersion the driver version (the Java version on the CPU backend)
	 * @param runtimeVersion the gpu-compute runtime version, {@code null} when unknown
	 * @param multiprocessors streaming multiprocessors (CUDA) or worker threads (CPU)
	 * @param totalMemoryBytes device memory, or the CPU backend's budget
	 */
	public record GpuInfo(Backend backend, String device, int ordinal, String uuid, String pciBusId,
			String computeCapability, String driverVersion, String runtimeVersion, int multiprocessors,
			long totalMemoryBytes) {
	}

}
