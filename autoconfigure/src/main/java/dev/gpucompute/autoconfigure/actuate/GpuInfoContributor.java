package dev.gpucompute.autoconfigure.actuate;

import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import org.jspecify.annotations.Nullable;
import org.springframework.boot.actuate.info.Info;
import org.springframework.boot.actuate.info.InfoContributor;

import dev.gpucompute.Backend;
import dev.gpucompute.DeviceInfo;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuDevices;

/**
 * Adds {@code gpu} to {@code /actuator/info}: backend, device name, ordinal, UUID, compute capability,
 * driver version, the gpu-compute runtime version and the device's memory and multiprocessors
 * ({@link GpuInfo}); with several devices, {@link GpuDevicesInfo}: the primary device's ordinal and
 * each device's {@link GpuInfo} keyed by ordinal. Values that never change while the application
 * runs; live figures are in the {@code gpu} endpoint.
 */
public class GpuInfoContributor implements InfoContributor {

	private final List<GpuContext> contexts;

	/**
	 * An info contributor describing {@code context}'s device.
	 * @param context the context to describe
	 */
	public GpuInfoContributor(GpuContext context) {
		this.contexts = List.of(context);
	}

	/**
	 * An info contributor describing every device of {@code devices}.
	 * @param devices the devices to describe
	 */
	public GpuInfoContributor(GpuDevices devices) {
		this.contexts = devices.contexts();
	}

	@Override
	public void contribute(Info.Builder builder) {
		if (this.contexts.size() == 1) {
			builder.withDetail("gpu", info(this.contexts.get(0).device()));
			return;
		}
		Map<Integer, GpuInfo> devices = new TreeMap<>();
		for (GpuContext context : this.contexts) {
			devices.put(context.device().ordinal(), info(context.device()));
		}
		builder.withDetail("gpu", new GpuDevicesInfo(this.contexts.get(0).device().ordinal(), devices));
	}

	private static GpuInfo info(DeviceInfo device) {
		return new GpuInfo(device.backend(), device.name(), device.ordinal(), device.uuid(), device.pciBusId(),
				device.computeCapability(), device.driverVersion(), runtimeVersion(), device.multiprocessors(),
				device.totalMemoryBytes());
	}

	private static @Nullable String runtimeVersion() {
		// From the runtime jar's manifest; absent when running from classes (IDE, this build's tests).
		return GpuContext.class.getPackage().getImplementationVersion();
	}

	/**
	 * What {@code /actuator/info} shows under {@code gpu} with several devices.
	 *
	 * @param primary the ordinal of the primary device (the one the single-device beans use)
	 * @param devices every device, by ordinal
	 */
	public record GpuDevicesInfo(int primary, Map<Integer, GpuInfo> devices) {
	}

	/**
	 * What {@code /actuator/info} shows under {@code gpu} for one device.
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
			String computeCapability, String driverVersion, @Nullable String runtimeVersion, int multiprocessors,
			long totalMemoryBytes) {
	}

}
