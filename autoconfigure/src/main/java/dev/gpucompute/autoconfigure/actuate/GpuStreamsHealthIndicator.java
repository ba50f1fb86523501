package dev.gpucompute.autoconfigure.actuate;

import java.util.List;

import org.springframework.boot.health.contributor.AbstractHealthIndicator;
import org.springframework.boot.health.contributor.Health;

import dev.gpucompute.GpuContext;
import dev.gpucompute.StreamPool;
import dev.gpucompute.StreamPool.LeaseInfo;
import dev.gpucompute.StreamPool.PoolStats;

/**
 * Health of a {@link GpuContext}'s stream pool: {@code DOWN}, with the reason, when the pool is
 * stalled ({@link StreamPool#stallReason()}: every stream has been leased for longer than the
 * leak-detection threshold while callers wait or time out, so leases are not coming back),
 * {@code UP} otherwise, also when the pool is merely busy. Details: leased streams, the maximum,
 * threads waiting, timeouts so far, the threshold and the age of the oldest lease.
 *
 * <p>{@code DOWN} rather than {@code OUT_OF_SERVICE}, as Spring Boot's DataSource health is
 * {@code DOWN} when its pool cannot hand out a connection in time: it is a failure nobody asked
 * for, not a deliberate withdrawal. It belongs in the readiness group, not the liveness group (see
 * {@link GpuHealthGroups}): a pool can recover (the leak safety net returns unreachable leases), and
 * restarting a busy service would not help it. Cheap (snapshots only) and thread-safe.
 */
public class GpuStreamsHealthIndicator extends AbstractHealthIndicator {

	private final GpuContext context;

	/**
	 * A health indicator for the stream pool of {@code context}.
	 * @param context the context whose pool to check; not closed by the indicator
	 */
	public GpuStreamsHealthIndicator(GpuContext context) {
		super("GPU stream pool health check failed");
		this.context = context;
	}

	@Override
	protected void doHealthCheck(Health.Builder builder) {
		StreamPool pool = this.context.streams();
		String stall = pool.stallReason();
		PoolStats stats = pool.stats();
		if (stall != null) {
			builder.down().withDetail("reason", stall);
		}
		else {
			builder.up();
		}
		builder.withDetail("active", stats.active())
			.withDetail("max", stats.maxSize())
			.withDetail("pending", stats.pending())
			.withDetail("timeouts", stats.timeouts())
			.withDetail("leaksDetected", stats.leaksDetected())
			.withDetail("leakDetectionThresholdMillis", pool.leakDetectionThreshold().toMillis());
		List<LeaseInfo> leases = pool.leases();
		if (!leases.isEmpty()) {
			builder.withDetail("oldestLeaseMillis", leases.get(0).held().toMillis());
		}
	}

}
