package dev.gpucompute.settings;

import java.time.Duration;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * The stream pool and the default stream of a context ({@code gpu.streams.*} in the Spring Boot
 * starter): their defaults, limits and checks, held here once. Immutable; every component is checked
 * on its own when the record is made, and the rule between two of them (a pool size that does not
 * exceed the maximum) by {@link #checked()}, which opening a context applies: a builder sets them
 * one at a time, in any order.
 *
 * @param poolSize streams created up front, 0 to {@link #MAX_STREAMS}; {@code null} for
 * {@value #DEFAULT_POOL_SIZE} or {@code maxSize} when that is smaller, so that setting only the
 * maximum never contradicts it
 * @param maxSize most streams the pool creates, 1 to {@link #MAX_STREAMS}
 * @param acquireTimeout longest wait for a lease when every stream is leased (zero: do not wait)
 * @param defaultStream which stream work goes to when no stream is current
 * @param leakDetectionThreshold a lease held longer than this logs its acquisition stack; zero for off
 */
public record StreamSettings(@Nullable Integer poolSize, int maxSize, Duration acquireTimeout, DefaultStreamMode defaultStream,
		Duration leakDetectionThreshold) {

	/** Most streams a pool may hold: far beyond any device's useful concurrency, far below what would exhaust memory. */
	public static final int MAX_STREAMS = 1024;

	/** Streams created up front unless set (or the maximum, when that is smaller). */
	public static final int DEFAULT_POOL_SIZE = 8;

	/** Most streams the pool creates unless set. */
	public static final int DEFAULT_MAX_SIZE = 32;

	/** Longest wait for a lease unless set. */
	public static final Duration DEFAULT_ACQUIRE_TIMEOUT = Duration.ofSeconds(30);

	/**
	 * The runtime's defaults: a pool of {@value #DEFAULT_POOL_SIZE} to {@value #DEFAULT_MAX_SIZE}
	 * streams, 30 s acquire timeout, a default stream per thread, leak detection off.
	 */
	public static final StreamSettings DEFAULTS = new StreamSettings(null, DEFAULT_MAX_SIZE, DEFAULT_ACQUIRE_TIMEOUT,
			DefaultStreamMode.PER_THREAD, Duration.ZERO);

	/**
	 * Checks each value on its own.
	 * @throws InvalidSettingException when one is out of its limits
	 * @throws NullPointerException when a duration or the mode is missing
	 */
	public StreamSettings {
		if (poolSize != null) {
			Limits.within(poolSize, 0, MAX_STREAMS, "poolSize");
		}
		Limits.within(maxSize, 1, MAX_STREAMS, "maxSize");
		Limits.nanos(acquireTimeout, "acquireTimeout");
		Objects.requireNonNull(defaultStream, "defaultStream");
		Limits.nanos(leakDetectionThreshold, "leakDetectionThreshold");
	}

	/**
	 * These settings, once the pool size (when set) is checked against the maximum.
	 * @throws InvalidSettingException ({@link InvalidSettingException.Problem#EXCEEDS}) when it is larger
	 */
	public StreamSettings checked() {
		if (this.poolSize != null) {
			Limits.notAbove(this.poolSize, "poolSize", this.maxSize, "maxSize");
		}
		return this;
	}

	/** The streams the pool creates up front: {@link #poolSize()}, or the default the maximum allows. */
	public int initialSize() {
		return (this.poolSize != null) ? this.poolSize : Math.min(DEFAULT_POOL_SIZE, this.maxSize);
	}

	/**
	 * Checks a limit of the streams leased at once at one priority: 1 to {@link #MAX_STREAMS} here,
	 * and at most the pool's maximum when a context opens ({@code name} names it in the message).
	 * @throws InvalidSettingException when it is outside
	 */
	public static int checkPriorityLimit(int limit, String name) {
		return Limits.within(limit, 1, MAX_STREAMS, name);
	}

	/** With {@code poolSize} streams up front ({@code null}: follow the maximum). */
	public StreamSettings withPoolSize(@Nullable Integer poolSize) {
		return new StreamSettings(poolSize, this.maxSize, this.acquireTimeout, this.defaultStream,
				this.leakDetectionThreshold);
	}

	/** With at most {@code maxSize} streams. */
	public StreamSettings withMaxSize(int maxSize) {
		return new StreamSettings(this.poolSize, maxSize, this.acquireTimeout, this.defaultStream,
				this.leakDetectionThreshold);
	}

	/** With {@code acquireTimeout}. */
	public StreamSettings withAcquireTimeout(Duration acquireTimeout) {
		return new StreamSettings(this.poolSize, this.maxSize, acquireTimeout, this.defaultStream,
				this.leakDetectionThreshold);
	}

	/** With {@code defaultStream}. */
	public StreamSettings withDefaultStream(DefaultStreamMode defaultStream) {
		return new StreamSettings(this.poolSize, this.maxSize, this.acquireTimeout, defaultStream,
				this.leakDetectionThreshold);
	}

	/** With {@code leakDetectionThreshold}. */
	public StreamSettings withLeakDetectionThreshold(Duration leakDetectionThreshold) {
		return new StreamSettings(this.poolSize, this.maxSize, this.acquireTimeout, this.defaultStream,
				leakDetectionThreshold);
	}

}
