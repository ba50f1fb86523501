package dev.gpucompute;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;

import dev.gpucompute.settings.KernelTiming;

/** The cleaner returns what was dropped without being closed (docs/runtime.md, "Semantics", item 11). */
class LeakSafetyNetTests {

	@Test
	void droppedLeaseEventAndBufferAreReturned() throws Exception {
		// With leak detection on; the threshold is long so that only the cleaner acts here.
		try (GpuContext context = GpuContext.builder().backend(Backend.CPU).cpuThreads(2).poolSize(1).maxSize(2)
			.kernelTiming(KernelTiming.OFF).leakDetectionThreshold(java.time.Duration.ofHours(1))
			.open()) {
			long memory = context.memory().usedBytes();
			dropResources(context);
			assertThat(context.streams().stats().active()).isEqualTo(1);
			assertThat(context.events().inUse()).isEqualTo(1);
			long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
			while ((context.streams().stats().active() > 0 || context.events().inUse() > 0
					|| context.memory().liveBuffers() > 0) && System.nanoTime() < deadline) {
				System.gc();
				Thread.sleep(20);
				context.synchronizeDevice();
			}
			assertThat(context.streams().stats().active()).as("lease returned by the cleaner").isZero();
			assertThat(context.events().inUse()).as("event returned by the cleaner").isZero();
			assertThat(context.memory().usedBytes()).as("buffer freed by the cleaner").isEqualTo(memory);
		}
	}

	@Test
	void aLeaseLeftCurrentByAnUnclosedScopeIsReturnedAndTheThreadRecovers() throws Exception {
		try (GpuContext context = GpuContext.builder().backend(Backend.CPU).cpuThreads(2).poolSize(1).maxSize(2)
			.kernelTiming(KernelTiming.OFF).leakDetectionThreshold(java.time.Duration.ofHours(1))
			.open()) {
			String leaked = leaveScopeOpen(context);
			assertThat(context.streams().stats().active()).isEqualTo(1);
			long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
			while (context.streams().stats().active() > 0 && System.nanoTime() < deadline) {
				System.gc();
				Thread.sleep(20);
			}
			assertThat(context.streams().stats().active()).as("lease returned by the cleaner").isZero();
			// The scope's stream is stale now: the next call on this thread says so once, then the thread
			// is back on its default stream.
			assertThatThrownBy(() -> context.launcher().currentStream()).isInstanceOf(GpuException.class)
				.hasMessageContaining(leaked)
				.hasMessageContaining("StreamScope");
			assertThat(context.launcher().currentStream().kind()).isEqualTo(GpuStream.Kind.DEFAULT_PER_THREAD);
		}
	}

	@Test
	void aDroppedHostBufferGoesBackToThePoolAfterItsPendingUpload() throws Exception {
		try (GpuContext context = GpuContext.builder().backend(Backend.CPU).cpuThreads(2).kernelTiming(KernelTiming.OFF)
			.open(); DeviceBuffer device = context.launcher().allocate(4096, ElementType.BYTE)) {
			java.util.concurrent.CompletableFuture<Void> upload = dropHostBufferWithAPendingUpload(context, device);
			upload.join();
			long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
			while (context.hostMemory().hostBuffers() > 0 && System.nanoTime() < deadline) {
				System.gc();
				Thread.sleep(20);
			}
			assertThat(context.hostMemory().hostBuffers()).as("host buffer released by the cleaner").isZero();
			assertThat(context.hostMemory().cachedBytes()).as("its memory back in the pool").isGreaterThanOrEqualTo(4096);
			float[] back = new float[1024];
			device.download(HostArray.of(back), device.stream()).join();
			assertThat(back).containsOnly(3f);
		}
	}

	private static java.util.concurrent.CompletableFuture<Void> dropHostBufferWithAPendingUpload(GpuContext context,
			DeviceBuffer device) {
		HostBuffer host = context.launcher().allocateHost(4096);
		float[] threes = new float[1024];
		java.util.Arrays.fill(threes, 3f);
		host.put(0, HostArray.of(threes));
		return device.upload(host, device.stream());
	}

	/** Leases a stream and makes it current without ever closing the scope or the lease. */
	private static String leaveScopeOpen(GpuContext context) {
		StreamLease lease = context.streams().acquire();
		context.launcher().useStream(lease.stream());
		return lease.stream().name();
	}

	private static void dropResources(GpuContext context) {
		context.streams().acquire();
		context.events().create();
		context.launcher().allocate(1024, ElementType.BYTE);
	}

}
