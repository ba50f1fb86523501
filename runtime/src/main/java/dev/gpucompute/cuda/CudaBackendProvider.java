package dev.gpucompute.cuda;

import static jcuda.driver.JCudaDriver.cuDeviceGet;
import static jcuda.driver.JCudaDriver.cuDeviceGetCount;
import static jcuda.driver.JCudaDriver.cuDeviceGetName;
import static jcuda.driver.JCudaDriver.cuDeviceTotalMem;

import dev.gpucompute.Backend;
import dev.gpucompute.BackendUnavailableException;
import dev.gpucompute.GpuException;
import dev.gpucompute.spi.Availability;
import dev.gpucompute.spi.BackendConfig;
import dev.gpucompute.spi.BackendProvider;
import dev.gpucompute.spi.ByteSizes;
import dev.gpucompute.spi.DeviceBackend;
import dev.gpucompute.spi.HostThreads;
import jcuda.driver.CUdevice;
import jcuda.driver.CUdevice_attribute;
import org.jspecify.annotations.Nullable;

/**
 * The CUDA backend, through JCuda's driver API binding. Found by
 * {@link dev.gpucompute.spi.Backends} (registered in {@code META-INF/services}). Constructing it
 * touches no native library; {@link #probe} loads the driver once per process and never throws.
 */
public final class CudaBackendProvider implements BackendProvider {

	public CudaBackendProvider() {
	}

	@Override
	public Backend backend() {
		return Backend.CUDA;
	}

	/**
	 * Whether device {@code ordinal} can be opened: the driver library ({@code libcuda.so}) loads,
	 * {@code cuInit} succeeds and the ordinal names a device. When available, the reason describes
	 * the device, e.g. {@code NVIDIA H100 80GB HBM3 (device 0 of 1, compute capability 9.0, 79.1
	 * GiB, driver 13.0)}.
	 */
	@Override
	public Availability probe(int ordinal) {
		try {
			CudaDriver.State driver = CudaDriver.init();
			String failure = driver.failure();
			if (failure != null) { // !driver.ok()
				return driver.broken() ? Availability.broken(failure) : Availability.no(failure);
			}
			int[] count = new int[1];
			int result = cuDeviceGetCount(count);
			if (result != CudaErrors.SUCCESS) {
				return Availability.no("cuDeviceGetCount failed: " + CudaErrors.describe(result));
			}
			if (count[0] == 0) {
				return Availability.no("no CUDA device");
			}
			if (ordinal < 0 || ordinal >= count[0]) {
				return Availability.no("device ordinal " + ordinal + " out of range (" + count[0] + " devices)");
			}
			return Availability.yes(describe(ordinal, count[0], driver.driverVersion()));
		}
		catch (Throwable ex) { // probing must never throw
			return Availability.no("probing CUDA failed: " + ex);
		}
	}

	/** JCuda's natives for this platform when they are not on the class path ({@link JCudaNatives#missing}). */
	@Override
	public @Nullable String missingDependency() {
		try {
			return JCudaNatives.missing(CudaBackendProvider.class.getClassLoader());
		}
		catch (RuntimeException ex) { // never throws, as probe
			return null;
		}
	}

	@Override
	public int deviceCount() {
		try {
			if (!CudaDriver.init().ok()) {
				return 0;
			}
			int[] count = new int[1];
			return (cuDeviceGetCount(count) == CudaErrors.SUCCESS) ? count[0] : 0;
		}
		catch (Throwable ex) { // never throws, as probe
			return 0;
		}
	}

	private static String describe(int ordinal, int count, int driverVersion) {
		CUdevice device = new CUdevice();
		CudaDriver.check(cuDeviceGet(device, ordinal), "cuDeviceGet");
		byte[] name = new byte[256];
		CudaDriver.check(cuDeviceGetName(name, name.length, device), "cuDeviceGetName");
		long[] memory = new long[1];
		CudaDriver.check(cuDeviceTotalMem(memory, device), "cuDeviceTotalMem");
		int major = CudaDriver.attribute(device, CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
		int minor = CudaDriver.attribute(device, CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
		return CudaFormat.cString(name) + " (device " + ordinal + " of " + count + ", compute capability " + major + "."
				+ minor + ", " + ByteSizes.format(memory[0]) + ", driver " + CudaFormat.driverVersion(driverVersion) + ")";
	}

	/**
	 * Opens the device: retains its primary context and reads its properties. Called on a virtual
	 * thread, the opening runs on a platform thread of its own while the caller waits: it makes the
	 * context current once and then calls the driver with waits in between (logging, the rooms' locks),
	 * each of which could move a virtual thread to a carrier where the context is not current.
	 * @throws BackendUnavailableException with the probe's reason when it cannot be opened
	 */
	@Override
	public DeviceBackend open(BackendConfig config) {
		if (HostThreads.isVirtual(Thread.currentThread())) {
			DeviceBackend[] opened = new DeviceBackend[1];
			CudaPrimaryContext.onPlatformThread("gpu-cuda" + config.ordinal() + "-open", () -> opened[0] = openHere(config));
			return opened[0];
		}
		return openHere(config);
	}

	private DeviceBackend openHere(BackendConfig config) {
		Availability availability = probe(config.ordinal());
		if (!availability.available()) {
			throw new BackendUnavailableException(Backend.CUDA, availability.reason(), CudaDriver.init().cause());
		}
		try {
			return new CudaDeviceBackend(config, CudaCompiler.system());
		}
		catch (GpuException ex) {
			throw ex;
		}
		catch (RuntimeException | LinkageError ex) {
			throw new BackendUnavailableException(Backend.CUDA, "device " + config.ordinal() + " could not be opened: " + ex, ex);
		}
	}

	@Override
	public String toString() {
		return "CudaBackendProvider";
	}

}
