package dev.gpucompute.autoconfigure.metrics;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.function.Predicate;

import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.config.MeterFilter;
import io.micrometer.core.instrument.distribution.DistributionStatisticConfig;

/**
 * Default histogram buckets for the GPU timers whose distribution the Grafana dashboard reads
 * ({@value GpuMeterNames#KERNEL_DURATION}, {@value GpuMeterNames#STREAMS_ACQUIRE} and
 * {@value GpuMeterNames#BATCH_WAIT}): 1-2-5 steps from 1 µs to 60 s, 25 buckets; and for the batch
 * sizes ({@value GpuMeterNames#BATCH_SIZE}): powers of two from 1 to 65536, 17 buckets. Kernels and lease waits range from microseconds to seconds; a quantile
 * estimate stays inside its bucket, at most 2.5 times wide, where a percentile histogram over the
 * same range would have over a hundred buckets.
 *
 * <p>A default only: a timer whose distribution is configured anyway (service-level objectives or
 * a percentile histogram, by an earlier filter or as the {@code configuredElsewhere} predicate says)
 * is left as configured. Spring Boot applies this filter to Prometheus registries, and only while
 * {@code management.metrics.distribution.slo.<meter>} and
 * {@code management.metrics.distribution.percentiles-histogram.<meter>} are not set for the timer;
 * other registries get no buckets unless configured. Plain Java:
 * {@code prometheusRegistry.config().meterFilter(new GpuHistogramBuckets())}, before binding
 * {@link GpuMetrics}.
 *
 * <p>Immutable and thread-safe.
 */
public final class GpuHistogramBuckets implements MeterFilter {

	/** The timers that get the default buckets. */
	public static final Set<String> TIMERS = Set.of(GpuMeterNames.KERNEL_DURATION, GpuMeterNames.STREAMS_ACQUIRE,
			GpuMeterNames.BATCH_WAIT);

	/** The distribution summaries that get the default batch-size buckets (powers of two, 1 to 65536). */
	public static final Set<String> SUMMARIES = Set.of(GpuMeterNames.BATCH_SIZE);

	private static final double[] BUCKETS_NANOS = bucketNanos();

	private static final double[] BATCH_SIZES = batchSizes();

	private final Predicate<Meter.Id> configuredElsewhere;

	/** Buckets for every one of {@link #TIMERS} that no earlier filter configured. */
	public GpuHistogramBuckets() {
		this((id) -> false);
	}

	/**
	 * Buckets for every one of {@link #TIMERS} that is neither configured by an earlier filter nor
	 * by {@code configuredElsewhere} (for example by properties that a later filter applies).
	 * @param configuredElsewhere whether a timer's distribution is configured by someone else
	 */
	public GpuHistogramBuckets(Predicate<Meter.Id> configuredElsewhere) {
		this.configuredElsewhere = Objects.requireNonNull(configuredElsewhere, "configuredElsewhere");
	}

	@Override
	public DistributionStatisticConfig configure(Meter.Id id, DistributionStatisticConfig config) {
		boolean timer = id.getType() == Meter.Type.TIMER && TIMERS.contains(id.getName());
		boolean summary = id.getType() == Meter.Type.DISTRIBUTION_SUMMARY && SUMMARIES.contains(id.getName());
		if ((!timer && !summary) || config.getServiceLevelObjectiveBoundaries() != null
				|| config.isPercentileHistogram() != null || this.configuredElsewhere.test(id)) {
			return config;
		}
		return DistributionStatisticConfig.builder()
			.serviceLevelObjectives(timer ? BUCKETS_NANOS : BATCH_SIZES)
			.build()
			.merge(config);
	}

	private static double[] batchSizes() {
		double[] sizes = new double[17];
		for (int i = 0; i < sizes.length; i++) {
			sizes[i] = 1 << i;
		}
		return sizes;
	}

	/** The bucket boundaries. */
	public static List<Duration> buckets() {
		List<Duration> buckets = new ArrayList<>();
		for (double nanos : BUCKETS_NANOS) {
			buckets.add(Duration.ofNanos((long) nanos));
		}
		return buckets;
	}

	private static double[] bucketNanos() {
		List<Double> buckets = new ArrayList<>();
		for (long decade = 1_000; decade <= 10_000_000_000L; decade *= 10) {
			for (long step : new long[] { 1, 2, 5 }) {
				buckets.add((double) (decade * step));
			}
		}
		buckets.add((double) Duration.ofSeconds(60).toNanos());
		return buckets.stream().mapToDouble(Double::doubleValue).toArray();
	}

}
