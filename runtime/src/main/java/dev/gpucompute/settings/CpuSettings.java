package dev.gpucompute.settings;

/**
 * The CPU backend ({@code gpu.cpu.*} in the Spring Boot starter): its defaults, limits and checks,
 * held here once. Immutable; checked when made.
 *
 * @param threads worker threads, which run kernel blocks in parallel: 1 to {@link #MAX_THREADS}
 * @param devices how many devices the backend stands in for, 1 to {@link #MAX_DEVICES}: ordinals 0 to
 * n-1, each with its own {@code threads} workers and, unless {@code memoryBudget} is set, an equal share
 * of the default budget
 * @param memoryBudget how much memory the backend may hand out as device memory, in bytes; 0 for the
 * default: half the machine's physical memory (the container's limit where one applies) where the
 * backend allocates through JNA, outside the JVM's direct-memory limit, the max heap size (the
 * direct-memory limit's default) where it falls back to direct buffers; with several devices each
 * gets an equal share of that default, or this whole budget when set
 */
public record CpuSettings(int threads, int devices, long memoryBudget) {

	/** Most worker threads of the CPU backend. */
	public static final int MAX_THREADS = 4096;

	/** Most devices the CPU backend stands in for. */
	public static final int MAX_DEVICES = 64;

	/** The runtime's defaults: a worker per available processor, one device, the default memory budget. */
	public static final CpuSettings DEFAULTS = new CpuSettings(Runtime.getRuntime().availableProcessors(), 1, 0);

	/**
	 * Checks each value.
	 * @throws InvalidSettingException when one is out of its limits
	 */
	public CpuSettings {
		Limits.within(threads, 1, MAX_THREADS, "cpuThreads");
		Limits.within(devices, 1, MAX_DEVICES, "cpuDevices");
		Limits.notNegative(memoryBudget, "cpuMemoryBudget");
	}

	/** With {@code threads} workers. */
	public CpuSettings withThreads(int threads) {
		return new CpuSettings(threads, this.devices, this.memoryBudget);
	}

	/** Standing in for {@code devices} devices. */
	public CpuSettings withDevices(int devices) {
		return new CpuSettings(this.threads, devices, this.memoryBudget);
	}

	/**
	 * With a memory budget of {@code bytes}, which must be positive (the default, 0, is not set
	 * explicitly).
	 * @throws InvalidSettingException when it is not positive
	 */
	public CpuSettings withMemoryBudget(long bytes) {
		Limits.positive(bytes, "cpuMemoryBudget");
		return new CpuSettings(this.threads, this.devices, bytes);
	}

}
