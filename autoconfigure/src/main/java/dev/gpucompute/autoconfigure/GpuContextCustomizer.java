package dev.gpucompute.autoconfigure;

import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuContextBuilder;

/**
 * Callback for beans that adjust the auto-configured {@link GpuContext} before it opens, for
 * settings that have no {@code gpu.*} property (the CPU backend's memory budget, the CUDA memory
 * pool's release threshold, utilisation sampling). Customizers run after the properties are
 * applied, in {@link org.springframework.core.Ordered order}, on the thread that creates the bean;
 * with several devices ({@code gpu.devices}) once for each device's builder.
 */
@FunctionalInterface
public interface GpuContextCustomizer {

	/**
	 * Customizes the builder; the backend and device are already chosen and should not be changed
	 * here.
	 */
	void customize(GpuContextBuilder builder);

}
