package dev.gpucompute.autoconfigure;

import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;

import org.jspecify.annotations.Nullable;
import org.springframework.boot.origin.Origin;
import org.springframework.core.env.Environment;

import dev.gpucompute.Backend;
import dev.gpucompute.BackendUnavailableException;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuContextBuilder;
import dev.gpucompute.GpuDevices;
import dev.gpucompute.listener.GpuListener;
import dev.gpucompute.spi.BackendProvider;
import dev.gpucompute.spi.BackendSelection;
import dev.gpucompute.spi.Backends;

/**
 * Opens the {@link GpuDevices} bean from {@link GpuProperties}: chooses the backend and the devices
 * ({@code gpu.device}, or {@code gpu.devices}; telling a missing device apart from a missing
 * backend), then opens one context per device with the properties, the listeners and the
 * customizers applied to its own builder.
 *
 * <p>Every {@link GpuListener} bean goes to every device, except a listener that a
 * {@link GpuListenerFactory} hands out for one device, which goes to that device only (after the
 * listener beans, unless it is one of them: then in its place among them).
 */
final class GpuContextFactory {

	private static final Log logger = LogFactory.getLog(GpuContextFactory.class);

	private final GpuProperties properties;

	private final List<GpuListener> listeners;

	private final List<GpuListenerFactory> listenerFactories;

	private final List<GpuContextCustomizer> customizers;

	private final Environment environment;

	GpuContextFactory(GpuProperties properties, List<GpuListener> listeners, List<GpuListenerFactory> listenerFactories,
			List<GpuContextCustomizer> customizers, Environment environment) {
		this.properties = properties;
		this.listeners = listeners;
		this.listenerFactories = listenerFactories;
		this.customizers = customizers;
		this.environment = environment;
	}

	/**
	 * Opens the devices; the first is the primary one.
	 * @throws DeviceOrdinalOutOfRangeException when an ordinal is beyond the devices of a backend
	 * that works here
	 * @throws BackendUnavailableException when the backend asked for cannot run here
	 */
	GpuDevices open() {
		Backend requested = this.properties.getBackend().backend();
		int cpuDevices = this.properties.getCpu().getDevices();
		List<Integer> ordinals = ordinals(requested, cpuDevices);
		Map<Integer, List<GpuListener>> own = new LinkedHashMap<>();
		Set<GpuListener> handedOut = Collections.newSetFromMap(new IdentityHashMap<>());
		for (int ordinal : ordinals) {
			List<GpuListener> forDevice = new ArrayList<>();
			for (GpuListenerFactory factory : this.listenerFactories) {
				GpuListener listener = factory.create(ordinal);
				if (listener != null && listener != GpuListener.NONE) {
					forDevice.add(listener);
					handedOut.add(listener);
				}
			}
			own.put(ordinal, forDevice);
		}
		// Each builder logs the one line saying which backend was chosen and why.
		// Every ordinal opened has its entry in own.
		GpuDevices devices = GpuDevices.open((ordinal) -> builder(requested, ordinal,
				listenerFor(Objects.requireNonNull(own.get(ordinal)), handedOut)), ordinals);
		GpuContext primary = devices.primary();
		if (requested == null && primary.backend() == Backend.CPU) {
			// The starter leaves JCuda's natives to the application: say so when that is why CUDA is not used.
			BackendProvider cuda = Backends.provider(Backend.CUDA);
			String missing = (cuda != null) ? cuda.missingDependency() : null;
			if (missing != null) {
				logger.info(missing + "; until then gpu.backend=auto uses the CPU backend");
			}
		}
		return devices;
	}

	/** The listener beans not handed to another device, with this device's own listeners. */
	private GpuListener listenerFor(List<GpuListener> own, Set<GpuListener> handedOut) {
		Set<GpuListener> mine = Collections.newSetFromMap(new IdentityHashMap<>());
		mine.addAll(own);
		List<GpuListener> result = new ArrayList<>();
		for (GpuListener listener : this.listeners) {
			if (!handedOut.contains(listener) || mine.remove(listener)) {
				result.add(listener);
			}
		}
		for (GpuListener listener : own) {
			if (mine.remove(listener)) {
				result.add(listener);
			}
		}
		return CompositeGpuListener.of(result);
	}

	private GpuContextBuilder builder(@Nullable Backend requested, int ordinal, GpuListener listener) {
		GpuContextBuilder builder = GpuContext.builder()
			.backend(requested)
			.device(ordinal)
			.streams(GpuSettingsMapping.streams(this.properties.getStreams()))
			.copies(GpuSettingsMapping.copies(this.properties.getCopies()))
			.cpu(GpuSettingsMapping.cpu(this.properties.getCpu()))
			.kernelSettings(GpuSettingsMapping.kernels(this.properties.getKernels()))
			.shutdown(GpuSettingsMapping.shutdown(this.properties.getShutdown()))
			.metrics(GpuSettingsMapping.metrics(this.properties.getMetrics()))
			.listener(listener);
		this.properties.getStreams().getPriorityLimits().forEach(builder::priorityLimit);
		for (GpuContextCustomizer customizer : this.customizers) {
			customizer.customize(builder);
		}
		return builder;
	}

	/** The ordinals to open, the primary first. */
	private List<Integer> ordinals(@Nullable Backend requested, int cpuDevices) {
		List<String> configured = this.properties.getDevices();
		if (configured == null) {
			return List.of(chooseOrdinal(requested, device(), cpuDevices));
		}
		// Validated when the properties were bound.
		DeviceSelection selection = DeviceSelection.parse(configured);
		BackendSelection first = Backends.select(requested, 0, cpuDevices);
		Backend backend = first.backend();
		if (backend != Backend.CPU && (first.provider() == null || !first.availability().available())) {
			throw new BackendUnavailableException(backend, first.availability().reason(), null);
		}
		int count = GpuDevices.deviceCount(backend, cpuDevices);
		List<Integer> ordinals = new ArrayList<>();
		if (selection.all()) {
			int primary = device();
			if (primary >= count) {
				if (requested != null || backend == Backend.CUDA) {
					throw new DeviceOrdinalOutOfRangeException(backend, "gpu.device", primary, count,
							PropertyOrigins.origin(this.environment, "gpu.device"));
				}
				logger.info("gpu.device=" + primary + " does not apply to the CPU backend that auto falls back to; "
						+ "using its device 0 as the primary device");
				primary = 0;
			}
			ordinals.add(primary);
			for (int ordinal = 0; ordinal < count; ordinal++) {
				if (ordinal != primary) {
					ordinals.add(ordinal);
				}
			}
		}
		else {
			for (int ordinal : selection.ordinals()) {
				if (ordinal >= count) {
					throw new DeviceOrdinalOutOfRangeException(backend, "gpu.devices", ordinal, count,
							devicesOrigin(configured, ordinal));
				}
			}
			if (this.properties.getDevice() != null) {
				ordinals.add(this.properties.getDevice());
			}
			for (int ordinal : selection.ordinals()) {
				if (!ordinals.contains(ordinal)) {
					ordinals.add(ordinal);
				}
			}
		}
		// Every device on the same backend: 'auto' must not run some devices on CUDA and others on the CPU.
		for (int ordinal : ordinals) {
			BackendSelection device = Backends.select(requested, ordinal, cpuDevices);
			if (device.backend() != backend || device.provider() == null || !device.availability().available()) {
				throw new BackendUnavailableException(backend, "device " + ordinal + " of gpu.devices (" + selection
						+ ") cannot be used: " + device.availability().reason(), null);
			}
		}
		return ordinals;
	}

	/** Where the element of {@code gpu.devices} that lists {@code ordinal} was set. */
	private @Nullable Origin devicesOrigin(List<String> configured, int ordinal) {
		for (int i = 0; i < configured.size(); i++) {
			if (DeviceSelection.parse(List.of(configured.get(i))).ordinals().contains(ordinal)) {
				Origin element = PropertyOrigins.origin(this.environment, "gpu.devices[" + i + "]");
				if (element != null) {
					return element;
				}
			}
		}
		return PropertyOrigins.origin(this.environment, "gpu.devices");
	}

	/**
	 * The ordinal to open when {@code gpu.devices} is not set. An ordinal beyond the devices of a
	 * backend that works here is a configuration error, also for {@code auto} (quietly running on the
	 * CPU of a GPU server would hide it); a machine without CUDA at all falls back to a CPU device:
	 * the one of that ordinal when {@code gpu.cpu.devices} has it, else device 0.
	 */
	private int chooseOrdinal(@Nullable Backend requested, int ordinal, int cpuDevices) {
		BackendSelection selection = Backends.select(requested, ordinal, cpuDevices);
		if (requested == null) {
			if (selection.backend() == Backend.CUDA) {
				return ordinal;
			}
			// auto falls back to the CPU: legitimate without CUDA, a configuration error when CUDA works
			checkOrdinal(Backends.provider(Backend.CUDA), Backend.CUDA, ordinal);
			if (ordinal < cpuDevices) {
				return ordinal;
			}
			logger.info("gpu.device=" + ordinal + " does not apply to the CPU backend that auto falls back to; "
					+ "using its device 0");
			return 0;
		}
		if (selection.provider() != null && selection.availability().available()) {
			return ordinal;
		}
		if (requested == Backend.CPU && selection.provider() != null && ordinal >= cpuDevices) {
			throw new DeviceOrdinalOutOfRangeException(Backend.CPU, ordinal, cpuDevices);
		}
		checkOrdinal(selection.provider(), requested, ordinal);
		throw new BackendUnavailableException(requested, selection.availability().reason(), null);
	}

	private static void checkOrdinal(@Nullable BackendProvider provider, Backend backend, int ordinal) {
		if (provider == null || ordinal == 0 || !provider.probe(0).available()) {
			return;
		}
		int count = 1;
		while (count < ordinal && provider.probe(count).available()) {
			count++;
		}
		throw new DeviceOrdinalOutOfRangeException(backend, ordinal, count);
	}

	/** The primary device {@code gpu.device} names, 0 when it is not set. */
	private int device() {
		Integer device = this.properties.getDevice();
		return (device != null) ? device : 0;
	}

}
