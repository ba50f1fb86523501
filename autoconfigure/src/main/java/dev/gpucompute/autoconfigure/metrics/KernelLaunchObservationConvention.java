package dev.gpucompute.autoconfigure.metrics;

import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationConvention;

/**
 * Names and tags the observation of a kernel launch. Define a bean of this type to replace
 * {@link DefaultKernelLaunchObservationConvention}.
 */
public interface KernelLaunchObservationConvention extends ObservationConvention<KernelLaunchContext> {

	@Override
	default boolean supportsContext(Observation.Context context) {
		return context instanceof KernelLaunchContext;
	}

}
