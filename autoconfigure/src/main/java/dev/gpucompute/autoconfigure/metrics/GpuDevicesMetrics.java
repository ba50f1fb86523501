package dev.gpucompute.autoconfigure.metrics;

import java.util.function.IntFunction;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.binder.MeterBinder;

import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuDevices;
import org.jspecify.annotations.Nullable;

/**
 * Binds the meters of every device of a {@link GpuDevices} except one that is bound elsewhere (the
 * primary device, whose meters the {@code gpuMetrics} bean binds): a {@link GpuMetrics} per device,
 * each tagged with its device's ordinal ({@code gpu}) and UUID ({@code uuid}), so that every
 * {@code gpu.*} meter exists once per device. With one device it binds nothing.
 */
public final class GpuDevicesMetrics implements MeterBinder {

	private final GpuDevices devices;

	private final @Nullable GpuContext boundElsewhere;

	private final IntFunction<@Nullable MicrometerGpuListener> listeners;

	/**
	 * @param devices the devices to observe
	 * @param boundElsewhere a context of {@code devices} whose meters another binder binds, or
	 * {@code null}
	 * @param listeners the listener each device was opened with, by ordinal ({@code null} for none:
	 * then that device's timers stay at zero)
	 */
	public GpuDevicesMetrics(GpuDevices devices, @Nullable GpuContext boundElsewhere,
			IntFunction<@Nullable MicrometerGpuListener> listeners) {
		this.devices = devices;
		this.boundElsewhere = boundElsewhere;
		this.listeners = listeners;
	}

	@Override
	public void bindTo(MeterRegistry registry) {
		for (GpuContext context : this.devices.contexts()) {
			if (context != this.boundElsewhere) {
				new GpuMetrics(context, this.listeners.apply(context.device().ordinal())).bindTo(registry);
			}
		}
	}

}
