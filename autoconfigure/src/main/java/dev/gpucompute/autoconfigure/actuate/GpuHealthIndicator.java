package dev.gpucompute.autoconfigure.actuate;

import org.springframework.boot.health.contributor.AbstractHealthIndicator;
import org.springframework.boot.health.contributor.Health;

import dev.gpucompute.DeviceInfo;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuContext.MemoryInfo;
import dev.gpucompute.StreamPool.PoolStats;

/**
 * Health of a {@link GpuContext}: {@code DOWN}, with the reason, once the context is closed or the
 * device has hit a sticky error ({@link GpuContext#healthProblem()}), {@code UP} otherwise. Details:
 * backend, device, free and total device memory, and pool saturation (leased streams over the pool
 * maximum, and threads waiting). A saturated pool is reported, not treated as {@code DOWN}: it means
 * the service is busy, not broken. Cheap: snapshots only, nothing is enqueued on the device.
 *
 * <p>Every detail is a plain value (a {@code String}, a number), as in Spring Boot's own indicators
 * (the {@code database} detail of {@code DataSourceHealthIndicator} is the product name as a string):
 * {@code backend} is the backend's name ({@code "CUDA"}, {@code "CPU"}), so whoever reads the details
 * in-process (a custom aggregator, a test, a health group's logging) sees what the JSON response shows,
 * and needs none of the runtime's types to read it.
 */
public class GpuHealthIndicator extends AbstractHealthIndicator {

	private final GpuContext context;

	/**
	 * A health indicator for {@code context}.
	 * @param context the context to check; not closed by the indicator
	 */
	public GpuHealthIndicator(GpuContext context) {
		super("GPU health check failed");
		this.context = context;
	}

	@Override
	protected void doHealthCheck(Health.Builder builder) {
		DeviceInfo device = this.context.device();
		builder.withDetail("backend", device.backend().name())
			.withDetail("device", device.name())
			.withDetail("ordinal", device.ordinal());
		String problem = this.context.healthProblem();
		if (problem != null) {
			builder.down().withDetail("reason", problem);
			return;
		}
		builder.up();
		MemoryInfo memory = this.context.memory();
		builder.withDetail("memoryFreeBytes", memory.freeBytes()).withDetail("memoryTotalBytes", memory.totalBytes());
		PoolStats pool = this.context.streams().stats();
		double saturation = (pool.maxSize() > 0) ? (double) pool.active() / pool.maxSize() : 0;
		builder.withDetail("poolActive", pool.active())
			.withDetail("poolMax", pool.maxSize())
			.withDetail("poolPending", pool.pending())
			.withDetail("poolSaturation", saturation);
	}

}
