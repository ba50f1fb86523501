package dev.gpucompute.settings;

import java.time.Duration;
import java.util.Objects;

/**
 * What a context measures ({@code gpu.metrics.*} in the Spring Boot starter): device time of
 * launches and the utilisation of pooled streams, with their defaults and checks held here once.
 * Immutable; checked when made.
 *
 * @param kernelTiming which launches are timed in device time, with a pair of timing events
 * @param utilizationSamplePeriod how often pooled streams are sampled for the utilisation statistic
 * ({@code PoolStats.utilization()}): zero turns sampling off; otherwise at least
 * {@link #MIN_UTILIZATION_SAMPLE_PERIOD} (each sample queries every pooled stream)
 * @param utilizationWindow the window the utilisation averages over; at least the period
 */
public record MetricsSettings(KernelTiming kernelTiming, Duration utilizationSamplePeriod,
		Duration utilizationWindow) {

	/** Shortest utilisation sampling period: sampling queries every pooled stream. */
	public static final Duration MIN_UTILIZATION_SAMPLE_PERIOD = Duration.ofMillis(1);

	/** The runtime's defaults: sampled kernel timing, utilisation sampled every 100 ms over 10 s. */
	public static final MetricsSettings DEFAULTS = new MetricsSettings(KernelTiming.SAMPLED, Duration.ofMillis(100),
			Duration.ofSeconds(10));

	/**
	 * Checks each value, and the window against the period.
	 * @throws NullPointerException when one is missing
	 * @throws InvalidSettingException when a duration is negative, the period is positive but shorter
	 * than {@link #MIN_UTILIZATION_SAMPLE_PERIOD}, or the window is shorter than the period
	 */
	public MetricsSettings {
		Objects.requireNonNull(kernelTiming, "kernelTiming");
		Limits.nanos(utilizationSamplePeriod, "period");
		Limits.nanos(utilizationWindow, "window");
		if (!utilizationSamplePeriod.isZero()) {
			if (utilizationSamplePeriod.compareTo(MIN_UTILIZATION_SAMPLE_PERIOD) < 0) {
				throw new InvalidSettingException("utilizationSamplePeriod", InvalidSettingException.Problem.TOO_SMALL,
						MIN_UTILIZATION_SAMPLE_PERIOD, "The utilisation sampling period must be zero (off) or at least "
								+ MIN_UTILIZATION_SAMPLE_PERIOD + ", got " + utilizationSamplePeriod);
			}
			if (utilizationWindow.compareTo(utilizationSamplePeriod) < 0) {
				throw new InvalidSettingException("utilizationWindow", InvalidSettingException.Problem.TOO_SMALL,
						utilizationSamplePeriod, "The utilisation window (" + utilizationWindow
								+ ") must be at least the sampling period (" + utilizationSamplePeriod + ")");
			}
		}
	}

	/** With {@code timing}. */
	public MetricsSettings withKernelTiming(KernelTiming timing) {
		return new MetricsSettings(timing, this.utilizationSamplePeriod, this.utilizationWindow);
	}

	/** With utilisation sampled every {@code period} over {@code window} (a zero period: off). */
	public MetricsSettings withUtilizationSampling(Duration period, Duration window) {
		return new MetricsSettings(this.kernelTiming, period, window);
	}

}
