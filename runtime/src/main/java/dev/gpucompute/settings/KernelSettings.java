package dev.gpucompute.settings;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * How a context compiles and loads kernels ({@code gpu.kernels.*} in the Spring Boot starter, which
 * adds the kernel files it loads at start-up): defaults, limits and checks, held here once.
 * Immutable; checked when made.
 *
 * @param compileOptions extra compiler options for CUDA C kernels (a kernel's own options are added
 * after these); no element may be {@code null}
 * @param cacheDir where compiled kernels are cached, keyed by source, options, device architecture and
 * driver version; {@code null} for no disk cache
 * @param loadWaitThreshold how long a kernel's load step (on CUDA the driver's module load) may take
 * while the context has work in flight before the load counts as having waited for that work: logged
 * at WARN and reported with {@code KernelLoad.waited()}. Zero reports every load made while work is in
 * flight
 */
public record KernelSettings(List<String> compileOptions, @Nullable Path cacheDir, Duration loadWaitThreshold) {

	/**
	 * A load longer than this while work runs counts as having waited, unless set: 5 ms (a prebuilt
	 * fatbin loads in under 0.5 ms on an idle H200).
	 */
	public static final Duration DEFAULT_LOAD_WAIT_THRESHOLD = Duration.ofMillis(5);

	/** The runtime's defaults: no extra options, no disk cache, a 5 ms load-wait threshold. */
	public static final KernelSettings DEFAULTS = new KernelSettings(List.of(), null, DEFAULT_LOAD_WAIT_THRESHOLD);

	/**
	 * Checks each value and copies the options.
	 * @throws NullPointerException when the options, one of them or the threshold is missing
	 * @throws InvalidSettingException when the threshold is negative
	 */
	public KernelSettings {
		Objects.requireNonNull(compileOptions, "compileOptions");
		for (int i = 0; i < compileOptions.size(); i++) {
			if (compileOptions.get(i) == null) {
				throw new NullPointerException("compileOptions[" + i + "] is null");
			}
		}
		compileOptions = List.copyOf(compileOptions);
		Limits.nanos(loadWaitThreshold, "kernelLoadWaitThreshold");
	}

	/** With {@code options}. */
	public KernelSettings withCompileOptions(List<String> options) {
		return new KernelSettings(options, this.cacheDir, this.loadWaitThreshold);
	}

	/** With the cache in {@code dir} ({@code null}: none). */
	public KernelSettings withCacheDir(Path dir) {
		return new KernelSettings(this.compileOptions, dir, this.loadWaitThreshold);
	}

	/** With {@code threshold}. */
	public KernelSettings withLoadWaitThreshold(Duration threshold) {
		return new KernelSettings(this.compileOptions, this.cacheDir, threshold);
	}

}
