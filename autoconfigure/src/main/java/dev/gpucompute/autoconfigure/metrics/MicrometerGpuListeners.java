package dev.gpucompute.autoconfigure.metrics;

import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;

import dev.gpucompute.GpuDevices;
import dev.gpucompute.autoconfigure.GpuListenerFactory;
import org.jspecify.annotations.Nullable;

/**
 * One {@link MicrometerGpuListener} per device: the auto-configuration asks this factory for the
 * listener of each device it opens ({@code gpu.devices}), because a listener serves one context (its
 * meters carry that device's tags). The primary device, asked for first, gets the
 * {@code micrometerGpuListener} bean, so that a single-device application is bound exactly as
 * before; every other device gets a listener of its own, which {@link GpuDevicesMetrics} binds with
 * that device's meters.
 *
 * <p>Thread-safe.
 */
public final class MicrometerGpuListeners implements GpuListenerFactory {

	private final MicrometerGpuListener primary;

	private final Map<Integer, MicrometerGpuListener> listeners = new ConcurrentHashMap<>();

	/**
	 * @param primary the listener of the primary device (the {@code micrometerGpuListener} bean)
	 */
	public MicrometerGpuListeners(MicrometerGpuListener primary) {
		this.primary = Objects.requireNonNull(primary, "primary");
	}

	@Override
	public synchronized MicrometerGpuListener create(int ordinal) {
		MicrometerGpuListener listener = this.listeners.isEmpty() ? this.primary : new MicrometerGpuListener();
		MicrometerGpuListener previous = this.listeners.putIfAbsent(ordinal, listener);
		return (previous != null) ? previous : listener;
	}

	/**
	 * The listener handed out for device {@code ordinal}, or {@code null} when none was (a
	 * {@link GpuDevices} the application opened itself).
	 */
	public @Nullable MicrometerGpuListener listener(int ordinal) {
		return this.listeners.get(ordinal);
	}

}
