package dev.gpucompute.autoconfigure.metrics;

import io.micrometer.common.KeyValue;
import io.micrometer.common.KeyValues;

import dev.gpucompute.GpuStream;

/**
 * The default {@link KernelLaunchObservationConvention}: observation {@value #NAME}, contextual name
 * {@code gpu launch <kernel>}, low-cardinality keys {@code kernel} and {@code outcome}
 * ({@code success}/{@code error}), high-cardinality key {@code stream}.
 *
 * <p>The kernel name is that of a kernel loaded into the context, so the low-cardinality keys stay
 * bounded. Launch observations are opt-in ({@code gpu.metrics.observe-launches=true}); once on, they
 * can be filtered with {@code management.observations.enable.gpu.kernel.launch=false}.
 */
public class DefaultKernelLaunchObservationConvention implements KernelLaunchObservationConvention {

	/** The observation's name. Its meter is a timer of that name, distinct from {@code gpu.kernel.launches}. */
	public static final String NAME = "gpu.kernel.launch";

	private static final KeyValue SUCCESS = KeyValue.of(GpuMeterNames.TAG_OUTCOME, GpuMeterNames.OUTCOME_SUCCESS);

	private static final KeyValue ERROR = KeyValue.of(GpuMeterNames.TAG_OUTCOME, GpuMeterNames.OUTCOME_ERROR);

	@Override
	public String getName() {
		return NAME;
	}

	@Override
	public String getContextualName(KernelLaunchContext context) {
		return "gpu launch " + context.getKernelName();
	}

	@Override
	public KeyValues getLowCardinalityKeyValues(KernelLaunchContext context) {
		return KeyValues.of(KeyValue.of(GpuMeterNames.TAG_KERNEL, context.getKernelName()),
				context.isEnqueued() ? SUCCESS : ERROR);
	}

	@Override
	public KeyValues getHighCardinalityKeyValues(KernelLaunchContext context) {
		GpuStream stream = context.getStream();
		return (stream != null) ? KeyValues.of("stream", stream.name()) : KeyValues.empty();
	}

}
