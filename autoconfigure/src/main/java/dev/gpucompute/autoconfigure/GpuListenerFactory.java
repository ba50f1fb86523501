package dev.gpucompute.autoconfigure;

import dev.gpucompute.GpuDevices;
import dev.gpucompute.listener.GpuListener;
import org.jspecify.annotations.Nullable;

/**
 * Supplies each device's own {@link GpuListener}, for listeners that serve one context, like the
 * Micrometer listener whose meters carry the device's tags. The auto-configuration asks every
 * factory bean once per device it opens ({@code gpu.devices}), just before opening them, in the
 * order they open (the primary device first), on the thread that creates the {@link GpuDevices}
 * bean.
 *
 * <p>A plain {@link GpuListener} bean is given to every device and cannot tell them apart. A
 * listener that a factory returns for one device is given to that device only, even when it is also
 * a {@link GpuListener} bean. Listeners must not throw and should be cheap (the {@link GpuListener}
 * contract); the context that receives one calls it from its own threads.
 */
@FunctionalInterface
public interface GpuListenerFactory {

	/**
	 * The listener for the device {@code ordinal}, about to be opened.
	 * @param ordinal the device ordinal
	 * @return its listener, or {@code null} (or {@link GpuListener#NONE}) for none
	 */
	@Nullable GpuListener create(int ordinal);

}
