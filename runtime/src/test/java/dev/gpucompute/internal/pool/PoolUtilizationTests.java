package dev.gpucompute.internal.pool;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

import org.junit.jupiter.api.Test;

import dev.gpucompute.Backend;
import dev.gpucompute.GpuContext;
import dev.gpucompute.Kernel;
import dev.gpucompute.KernelSource;
import dev.gpucompute.LaunchConfig;
import dev.gpucompute.ParamType;
import dev.gpucompute.StreamLease;
import dev.gpucompute.StreamPool;
import dev.gpucompute.StreamPool.PoolStats;
import dev.gpucompute.settings.KernelTiming;

/**
 * The pool's utilisation sample and busy check ({@link PoolUtilization}): a stream with work in
 * flight counts as busy, its share is an exponential average that decays once it is idle, and an
 * idle stream stays at zero. Sampled by hand (the housekeeping timer is off), work held by a latch:
 * no clock involved. The same on every backend; run on the CPU backend.
 */
class PoolUtilizationTests {

	@Test
	void aStreamWithWorkInFlightIsBusyAndItsShareDecaysOnceItIsIdle() throws Exception {
		CountDownLatch started = new CountDownLatch(1);
		CountDownLatch release = new CountDownLatch(1);
		KernelSource wait = KernelSource.named("wait").params(ParamType.INT).cpu((block, args) -> {
			started.countDown();
			try {
				release.await(30, TimeUnit.SECONDS);
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
			}
		});
		try (GpuContext context = GpuContext.builder()
			.backend(Backend.CPU)
			.cpuThreads(1)
			.poolSize(2)
			.maxSize(2)
			.kernelTiming(KernelTiming.OFF)
			.utilizationSampling(Duration.ZERO, Duration.ZERO)
			.open()) {
			Pool pool = (Pool) context.streams();
			Kernel kernel = context.launcher().load(wait);
			// Released before the context closes, so that a failed assertion does not wait out the drain.
			try (StreamLease busy = pool.acquire()) {
				String name = busy.stream().name();
				assertThat(pool.anyBusy()).isFalse();
				context.launcher().launch(busy.stream(), kernel, LaunchConfig.linear(1, 1), 0);
				assertThat(started.await(30, TimeUnit.SECONDS)).isTrue();
				assertThat(pool.anyBusy()).isTrue();
				pool.sampleBusy(0.5);
				assertThat(shares(pool)).hasSize(2).containsEntry(name, 0.5).containsValue(0.0);
				assertThat(pool.stats().utilization()).isEqualTo(0.25);
				release.countDown();
				busy.stream().synchronize();
				assertThat(pool.anyBusy()).isFalse();
				pool.sampleBusy(0.5);
				assertThat(shares(pool)).hasSize(2).containsEntry(name, 0.25).containsValue(0.0);
			}
			finally {
				release.countDown();
			}
		}
	}

	private static Map<String, Double> shares(StreamPool pool) {
		return pool.stats()
			.streams()
			.stream()
			.collect(Collectors.toMap(PoolStats.StreamStats::name, PoolStats.StreamStats::busyShare));
	}

}
