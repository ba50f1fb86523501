package dev.gpucompute.internal.pool;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import org.junit.jupiter.api.Test;

import dev.gpucompute.Backend;
import dev.gpucompute.DeviceInfo;
import dev.gpucompute.Dim3;
import dev.gpucompute.StreamLease;
import dev.gpucompute.StreamPool.PoolStats;
import dev.gpucompute.internal.core.ContextState;
import dev.gpucompute.internal.stream.Streams;
import dev.gpucompute.listener.GpuListener;
import dev.gpucompute.settings.DefaultStreamMode;

/**
 * A pooled stream its backend can no longer vouch for ({@code NativeStream.isReusable()} false: on
 * CUDA, one the driver may still capture after an end that failed) is destroyed when its lease is
 * returned, never handed to another holder, and leaves room for a new stream. A pool of fake streams,
 * at most one, so that the next lease is only possible on a new stream.
 */
class PoolDiscardTests {

	private final List<FakeStream> made = new CopyOnWriteArrayList<>();

	private final Pool pool;

	PoolDiscardTests() {
		var backend = FakeStream.backend(this.made, new RuntimeException[1]);
		ContextState lifecycle = new ContextState(1, new DeviceInfo(Backend.CPU, 0, "fake", "fake", "fake", "0.0", 1,
				1L << 30, "none", 1024, Dim3.of(1024, 1024, 64), Dim3.of(65535, 65535, 65535), 48 * 1024, 32), null);
		Streams streams = new Streams(lifecycle, null, null, backend, DefaultStreamMode.PER_THREAD);
		this.pool = new Pool(lifecycle, backend, streams, new GpuListener() {
		}, null, 1, 1, Duration.ofSeconds(5), Duration.ZERO, new int[] { 1, 1 });
		this.pool.fill();
	}

	@Test
	void aStreamItsBackendLostIsDestroyedOnReturnAndReplacedForTheNextHolder() {
		StreamLease lease = this.pool.acquire();
		FakeStream lost = this.made.get(0);
		lost.reusable = false;
		lease.close();
		assertThat(lost.destroyed).as("destroyed instead of pooled").isTrue();
		PoolStats afterReturn = this.pool.stats();
		assertThat(afterReturn.size()).isZero();
		assertThat(afterReturn.active()).isZero();
		assertThat(afterReturn.destroyed()).isEqualTo(1);

		try (StreamLease next = this.pool.acquire(Duration.ZERO)) {
			assertThat(this.made).hasSize(2);
			assertThat(this.made.get(1).destroyed).isFalse();
			assertThat(this.pool.stats().active()).isEqualTo(1);
		}
		assertThat(this.pool.stats().idle()).as("a reusable stream goes back").isEqualTo(1);
	}

}
