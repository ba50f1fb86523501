package dev.gpucompute.test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.platform.engine.discovery.DiscoverySelectors.selectClass;
import static org.junit.platform.testkit.engine.EventConditions.event;
import static org.junit.platform.testkit.engine.EventConditions.finishedSuccessfully;
import static org.junit.platform.testkit.engine.EventConditions.finishedWithFailure;
import static org.junit.platform.testkit.engine.EventConditions.test;
import static org.junit.platform.testkit.engine.TestExecutionResultConditions.instanceOf;
import static org.junit.platform.testkit.engine.TestExecutionResultConditions.message;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.platform.testkit.engine.EngineTestKit;
import org.junit.platform.testkit.engine.Events;
import org.opentest4j.AssertionFailedError;

import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.ImportAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.SpringBootTest.WebEnvironment;
import org.springframework.context.annotation.Bean;

import dev.gpucompute.Backend;
import dev.gpucompute.DeviceBuffer;
import dev.gpucompute.ElementType;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuEvent;
import dev.gpucompute.GpuLauncher;
import dev.gpucompute.HostArray;
import dev.gpucompute.KernelSource;
import dev.gpucompute.LaunchConfig;
import dev.gpucompute.ParamType;
import dev.gpucompute.StreamLease;
import dev.gpucompute.autoconfigure.GpuAutoConfiguration;

/**
 * {@link GpuLeakCheck} run on test classes through JUnit's EngineTestKit: leaking tests really fail,
 * naming what leaked and the line that acquired it; clean ones pass. The classes run are nested
 * here (Surefire runs no nested class on its own).
 */
class GpuLeakCheckTests {

	private static Events run(Class<?> testClass) {
		return EngineTestKit.engine("junit-jupiter").selectors(selectClass(testClass)).execute().testEvents();
	}

	@Test
	void aTestThatLeavesALeaseABufferAndAnEventOpenFailsNamingEachSite() {
		Events events;
		try {
			events = run(PlainLeaks.class);
		}
		finally {
			PlainLeaks.gpu.close();
		}
		events.assertStatistics((stats) -> stats.started(2).succeeded(1).failed(1));
		events.assertThatEvents()
			.haveExactly(1, event(test("leaks"), finishedWithFailure(instanceOf(AssertionFailedError.class),
					message((text) -> text.startsWith("GPU leak check: the test left 3 resources open:")
							&& text.contains("Stream lease of pool-")
							&& text.contains("Device buffer of 64 bytes on pool-")
							&& text.contains("- Event (")
							&& text.contains("acquired on thread '")
							&& text.contains("at dev.gpucompute.test.GpuLeakCheckTests$PlainLeaks.leaks(GpuLeakCheckTests.java:")))))
			.haveExactly(1, event(test("closesEverything"), finishedSuccessfully()));
		Throwable failure = events.failed().stream().findFirst().orElseThrow()
			.getPayload(org.junit.platform.engine.TestExecutionResult.class).orElseThrow().getThrowable().orElseThrow();
		assertThat(failure.getSuppressed()).hasSize(3)
			.allSatisfy((site) -> assertThat(site.getMessage()).endsWith("acquired here"));
	}

	@Test
	void aBufferLeftToTheContextsCloseIsALeakToo() {
		run(LeftToClose.class).assertThatEvents()
			.haveExactly(1, event(test("leavesItToClose"), finishedWithFailure(message((text) -> text
				.contains("Device buffer of 16 bytes") && text.contains("still open when its context closed")))));
	}

	@Test
	void workStillInFlightFailsUnlessTurnedOff() throws Exception {
		try {
			Events events = run(PendingWork.class);
			events.assertThatEvents()
				.haveExactly(1, event(test("leavesWorkRunning"), finishedWithFailure(message((text) -> text
					.contains("the test left work in flight") && text.contains("a pooled stream has work in flight")))))
				.haveExactly(1, event(test("leavesWorkRunningButSaysSo"), finishedSuccessfully()));
		}
		finally {
			PendingWork.release.countDown();
			PendingWork.gpu.close();
		}
	}

	@Test
	void aSpringTestFailsForWhatItLeaksNotForWhatTheApplicationHolds() {
		Events events = run(SpringLeaks.class);
		events.assertThatEvents()
			.haveExactly(1, event(test("leaksAnEvent"), finishedWithFailure(message((text) -> text.contains("1 resource open")
					&& text.contains("- Event (") && text.contains("GpuLeakCheckTests$SpringLeaks.leaksAnEvent")))))
			.haveExactly(1, event(test("closesItsBuffer"), finishedSuccessfully()));
	}

	// ---- the test classes run above -----------------------------------------------------------------

	@GpuLeakCheck
	static class PlainLeaks {

		/** Closed by the test that runs this class, after the check: what a test left is still held then. */
		static GpuContext gpu;

		@BeforeAll
		static void open() {
			gpu = GpuContext.builder().backend(Backend.CPU).cpuThreads(1).open();
		}

		@Test
		void leaks() {
			StreamLease lease = gpu.streams().acquire();
			gpu.launcher().withStream(lease.stream(), () -> gpu.launcher().allocate(16, ElementType.FLOAT));
			gpu.events().create();
		}

		@Test
		void closesEverything() {
			try (StreamLease lease = gpu.streams().acquire(); GpuEvent event = gpu.events().create()) {
				GpuLauncher launcher = gpu.launcher();
				launcher.withStream(lease.stream(), () -> {
					try (DeviceBuffer buffer = launcher.upload(HostArray.of(new float[4]))) {
						buffer.download(HostArray.of(new float[4])).join();
					}
				});
				lease.stream().record(event);
				event.synchronize();
			}
		}

	}

	@GpuLeakCheck
	static class LeftToClose {

		@Test
		void leavesItToClose() {
			try (GpuContext gpu = GpuContext.builder().backend(Backend.CPU).cpuThreads(1).open()) {
				gpu.launcher().allocate(16, ElementType.BYTE);
			}
		}

	}

	static class PendingWork {

		static final CountDownLatch release = new CountDownLatch(1);

		static final GpuContext gpu = GpuContext.builder().backend(Backend.CPU).cpuThreads(1).drainTimeout(java.time.Duration.ofSeconds(5)).open();

		static final KernelSource WAIT = KernelSource.named("wait_for_release").params(ParamType.INT).cpu((block, args) -> {
			try {
				release.await(30, TimeUnit.SECONDS);
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
			}
		});

		@Test
		@GpuLeakCheck
		void leavesWorkRunning() {
			try (StreamLease lease = gpu.streams().acquire()) {
				gpu.launcher().withStream(lease.stream(), () -> gpu.launcher().launch(WAIT, LaunchConfig.linear(1, 1), 0));
			}
		}

		@Test
		@GpuLeakCheck(pendingWork = false)
		void leavesWorkRunningButSaysSo() {
			leavesWorkRunning();
		}

	}

	@SpringBootTest(classes = SpringLeaks.Application.class, webEnvironment = WebEnvironment.NONE)
	@GpuCpuBackend
	@GpuLeakCheck
	static class SpringLeaks {

		@Autowired
		private GpuLauncher launcher;

		@Autowired
		private GpuContext gpu;

		@Test
		void leaksAnEvent() {
			this.gpu.events().create();
		}

		@Test
		void closesItsBuffer() {
			try (DeviceBuffer buffer = this.launcher.upload(HostArray.of(new int[] { 1, 2, 3 }))) {
				buffer.download(HostArray.of(new int[3])).join();
			}
		}

		@SpringBootConfiguration(proxyBeanMethods = false)
		@ImportAutoConfiguration(GpuAutoConfiguration.class)
		static class Application {

			/** What the application holds for its whole life, from start-up: never reported. */
			@Bean(destroyMethod = "close")
			DeviceBuffer applicationBuffer(GpuLauncher launcher) {
				return launcher.allocate(1024, ElementType.BYTE);
			}

		}

	}

}
