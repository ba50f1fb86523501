package dev.gpucompute;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** {@link LeakTracker}: what it reports, and what it leaves out. */
class LeakTrackerTests {

	private GpuContext gpu;

	@BeforeEach
	void open() {
		this.gpu = GpuContext.builder().backend(Backend.CPU).cpuThreads(2).open();
	}

	@AfterEach
	void close() {
		this.gpu.close();
	}

	@Test
	void reportsWhatWasAcquiredWhileOpenAndNotClosedWithItsSite() {
		try (DeviceBuffer before = this.gpu.launcher().allocate(8, ElementType.BYTE); LeakTracker tracker = LeakTracker.start()) {
			StreamLease lease = this.gpu.streams().acquire();
			DeviceBuffer buffer = this.gpu.launcher().allocate(4, ElementType.FLOAT);
			GpuEvent event = this.gpu.events().createTiming();
			try (GpuEvent closed = this.gpu.events().create()) {
				closed.isComplete();
			}
			assertThat(tracker.openResources()).extracting(LeakTracker.OpenResource::kind)
				.containsExactly(LeakTracker.Kind.STREAM_LEASE, LeakTracker.Kind.DEVICE_BUFFER, LeakTracker.Kind.EVENT);
			assertThat(tracker.openResources()).extracting(LeakTracker.OpenResource::description)
				.containsExactly("Stream lease of " + lease.stream().name(), "Device buffer of 16 bytes on default-per-thread[main]",
						"Timing event");
			assertThat(tracker.openResources()).allSatisfy((resource) -> {
				assertThat(resource.thread()).isEqualTo(Thread.currentThread().getName());
				assertThat(resource.context()).isSameAs(this.gpu);
				assertThat(resource.acquiredAt().getStackTrace()).anySatisfy((frame) -> assertThat(frame.getMethodName())
					.isEqualTo("reportsWhatWasAcquiredWhileOpenAndNotClosedWithItsSite"));
			});
			lease.close();
			buffer.close();
			event.close();
			assertThat(tracker.openResources()).isEmpty();
		}
	}

	@Test
	void whatAContextClosesForItsHolderIsReported() {
		try (LeakTracker tracker = LeakTracker.start()) {
			try (GpuContext own = GpuContext.builder().backend(Backend.CPU).cpuThreads(1).open()) {
				own.launcher().allocate(3, ElementType.INT);
			}
			assertThat(tracker.openResources()).singleElement().satisfies((resource) -> {
				assertThat(resource.closedWithContext()).isTrue();
				assertThat(resource.toString()).contains("Device buffer of 12 bytes").contains("still open when its context closed");
			});
		}
	}

	@Test
	void pendingWorkIsWhatStillRunsAfterTheGrace() throws Exception {
		CountDownLatch release = new CountDownLatch(1);
		KernelSource wait = KernelSource.named("wait").params(ParamType.INT).cpu((block, args) -> {
			try {
				release.await(30, TimeUnit.SECONDS);
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
			}
		});
		try (LeakTracker tracker = LeakTracker.start()) {
			try (DeviceBuffer buffer = this.gpu.launcher().upload(HostArray.of(new int[4]))) {
				buffer.download(HostArray.of(new int[4])).join();
			}   // its free is enqueued on the default stream: briefly busy, done within the grace
			assertThat(tracker.pendingWork(Duration.ofSeconds(5))).isEmpty();
			try (StreamLease lease = this.gpu.streams().acquire()) {
				this.gpu.launcher().launch(lease.stream(), this.gpu.launcher().load(wait), LaunchConfig.linear(1, 1), 0);
			}
			assertThat(tracker.pendingWork(Duration.ofMillis(50))).singleElement().asString()
				.contains("a pooled stream has work in flight");
			release.countDown();
			assertThat(tracker.pendingWork(Duration.ofSeconds(10))).isEmpty();
		}
	}

}
