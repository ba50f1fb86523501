package dev.gpucompute.autoconfigure.actuate;

import org.springframework.boot.health.contributor.AbstractHealthIndicator;
import org.springframework.boot.health.contributor.Health;

import dev.gpucompute.DeviceInfo;
import dev.gpucompute.GpuContext;
import dev.gpucompute.MemoryInfo;
import dev.gpucompute.PoolStats;

/**
 * Health of a {@link GpuContext}: {@code DOWN}, with the reason, once the context is closed or the
 * device has hit a sticky error ({@link GpuContext#healthProblem()}), {@code UP} otherwise. Details:
 * backend, device, free and total device memory, and pool saturation (leased streams over the pool
 * maximum, and threads waiting). A saturated pool is reported, not treated as {@code DOWN}: it means
 * the service is busy, not broken. Cheap: snapshots only, nothing is enqueued on the device.
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
		builder.withDetail("backend", device.backend())
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
