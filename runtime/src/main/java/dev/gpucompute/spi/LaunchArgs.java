package dev.gpucompute.spi;

import dev.gpucompute.ParamType;

/**
 * The validated arguments of one launch, as the backend sees them. Only valid during
 * {@link DeviceBackend#launch}.
 */
public interface LaunchArgs {

	int count();

	ParamType type(int index);

	int i32(int index);

	long i64(int index);

	float f32(int index);

	double f64(int index);

	NativeMemory memory(int index);

}
