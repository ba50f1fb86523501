package dev.gpucompute;

/**
 * The type of one kernel parameter, declared in {@link KernelSource#params(ParamType...)} and
 * checked at every launch before the arguments reach a driver.
 */
public enum ParamType {

	/** {@code int} (Java {@code Integer}). */
	INT(Integer.class),

	/** {@code long long} (Java {@code Long}). */
	LONG(Long.class),

	/** {@code float} (Java {@code Float}). */
	FLOAT(Float.class),

	/** {@code double} (Java {@code Double}). */
	DOUBLE(Double.class),

	/** A device pointer ({@link DeviceBuffer}). */
	BUFFER(DeviceBuffer.class);

	private final Class<?> javaType;

	ParamType(Class<?> javaType) {
		this.javaType = javaType;
	}

	/** The Java type an argument for this parameter must have. */
	public Class<?> javaType() {
		return this.javaType;
	}

}
