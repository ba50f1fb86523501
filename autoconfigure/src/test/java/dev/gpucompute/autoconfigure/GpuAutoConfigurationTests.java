package dev.gpucompute.autoconfigure;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import org.junit.jupiter.api.Test;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.web.server.context.WebServerGracefulShutdownLifecycle;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Import;
import org.springframework.context.annotation.Primary;
import org.springframework.core.annotation.Order;

import dev.gpucompute.Backend;
import dev.gpucompute.BackendUnavailableException;
import dev.gpucompute.DefaultStreamMode;
import dev.gpucompute.EventRegistry;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuLauncher;
import dev.gpucompute.GpuListener;
import dev.gpucompute.KernelTiming;
import dev.gpucompute.StreamLease;
import dev.gpucompute.StreamPool;
import dev.gpucompute.autoconfigure.kernels.GpuKernels;
import dev.gpucompute.spi.BackendSelection;
import dev.gpucompute.spi.Backends;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assumptions.assumeThat;

/**
 * Tests for {@link GpuAutoConfiguration}: which beans exist, which backend they run on, and how
 * the properties reach the context.
 */
class GpuAutoConfigurationTests {

	private final ApplicationContextRunner runner = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(GpuAutoConfiguration.class));

	@Test
	void beansPresentByDefault() {
		this.runner.run((context) -> {
			assertThat(context).hasSingleBean(GpuContext.class)
				.hasSingleBean(StreamPool.class)
				.hasSingleBean(EventRegistry.class)
				.hasSingleBean(GpuLauncher.class)
				.hasSingleBean(GpuKernels.class)
				.hasSingleBean(GpuLifecycle.class)
				.hasSingleBean(GpuProperties.class);
			GpuContext gpu = context.getBean(GpuContext.class);
			assertThat(context.getBean(StreamPool.class)).isSameAs(gpu.streams());
			assertThat(context.getBean(EventRegistry.class)).isSameAs(gpu.events());
			assertThat(context.getBean(GpuLauncher.class)).isSameAs(gpu.launcher());
			assertThat(gpu.isHealthy()).isTrue();
		});
	}

	@Test
	void nothingConfiguredWhenDisabled() {
		this.runner.withPropertyValues("gpu.enabled=false").run((context) -> {
			assertThat(context).hasNotFailed()
				.doesNotHaveBean(GpuContext.class)
				.doesNotHaveBean(StreamPool.class)
				.doesNotHaveBean(EventRegistry.class)
				.doesNotHaveBean(GpuLauncher.class)
				.doesNotHaveBean(GpuLifecycle.class)
				.doesNotHaveBean(GpuProperties.class);
		});
	}

	@Test
	void disabledIgnoresInvalidProperties() {
		this.runner.withPropertyValues("gpu.enabled=false", "gpu.backend=rocm", "gpu.streams.pool-size=-1")
			.run((context) -> assertThat(context).hasNotFailed().doesNotHaveBean(GpuContext.class));
	}

	@Test
	void userContextWins() {
		this.runner.withUserConfiguration(UserContextConfiguration.class).run((context) -> {
			assertThat(context).hasSingleBean(GpuContext.class).hasBean("userGpuContext").doesNotHaveBean("gpuContext");
			GpuContext gpu = context.getBean(GpuContext.class);
			assertThat(gpu.streams().maxSize()).isEqualTo(3);
			assertThat(context.getBean(StreamPool.class)).isSameAs(gpu.streams());
			assertThat(context.getBean(GpuLauncher.class)).isSameAs(gpu.launcher());
		});
	}

	@Test
	void userPoolRegistryAndLauncherWin() {
		this.runner.withUserConfiguration(UserViewsConfiguration.class).run((context) -> {
			GpuContext other = context.getBean("otherContext", GpuContext.class);
			assertThat(context.getBean(StreamPool.class)).isSameAs(other.streams());
			assertThat(context.getBean(EventRegistry.class)).isSameAs(other.events());
			assertThat(context.getBean(GpuLauncher.class)).isSameAs(other.launcher());
			assertThat(context).doesNotHaveBean("gpuStreamPool")
				.doesNotHaveBean("gpuEventRegistry")
				.doesNotHaveBean("gpuLauncher");
		});
	}

	@Test
	void severalUserContextsUseThePrimaryOne() {
		this.runner.withUserConfiguration(PrimaryContextConfiguration.class).run((context) -> {
			GpuContext primary = context.getBean("primaryContext", GpuContext.class);
			assertThat(context.getBean(StreamPool.class)).isSameAs(primary.streams());
			assertThat(context.getBean(GpuLauncher.class)).isSameAs(primary.launcher());
			assertThat(context).hasSingleBean(GpuLifecycle.class).hasSingleBean(GpuKernels.class);
		});
	}

	@Test
	void severalUserContextsWithoutAPrimaryOneGetNoViews() {
		this.runner.withUserConfiguration(TwoContextsConfiguration.class)
			.run((context) -> assertThat(context).hasNotFailed()
				.doesNotHaveBean(StreamPool.class)
				.doesNotHaveBean(GpuLauncher.class)
				.doesNotHaveBean(GpuLifecycle.class));
	}

	@Test
	void userContextIsClosedByTheApplicationContext() {
		GpuContext[] captured = new GpuContext[1];
		this.runner.withUserConfiguration(UserContextConfiguration.class)
			.run((context) -> captured[0] = context.getBean(GpuContext.class));
		assertThat(captured[0].isClosed()).isTrue();
	}

	@Test
	void autoBackendFallsBackToCpuWhenTheCudaDriverCannotLoad() {
		// JCuda and its natives are on the test class path, so CUDA is really probed; this machine has no driver.
		BackendSelection cuda = Backends.select(Backend.CUDA, 0);
		assumeThat(cuda.availability().available()).as("a CUDA device is present").isFalse();
		assertThat(cuda.provider()).as("the CUDA provider is on the class path").isNotNull();
		this.runner.withPropertyValues("gpu.backend=auto").run((context) -> {
			GpuContext gpu = context.getBean(GpuContext.class);
			assertThat(gpu.backend()).isEqualTo(Backend.CPU);
			assertThat(gpu.backendReason()).contains("falling back to CPU")
				.contains(cuda.availability().reason());
		});
	}

	@Test
	void autoIsTheDefault() {
		this.runner.run((context) -> {
			GpuContext gpu = context.getBean(GpuContext.class);
			assertThat(context.getBean(GpuProperties.class).getBackend()).isEqualTo(BackendChoice.AUTO);
			assertThat(gpu.backendReason()).startsWith("auto:");
		});
	}

	@Test
	void cpuBackendWhenRequested() {
		this.runner.withPropertyValues("gpu.backend=cpu").run((context) -> {
			GpuContext gpu = context.getBean(GpuContext.class);
			assertThat(gpu.backend()).isEqualTo(Backend.CPU);
			assertThat(gpu.backendReason()).isEqualTo("CPU backend requested");
		});
	}

	@Test
	void backendValueIsCaseInsensitive() {
		this.runner.withPropertyValues("gpu.backend=CPU")
			.run((context) -> assertThat(context.getBean(GpuContext.class).backend()).isEqualTo(Backend.CPU));
	}

	@Test
	void cudaBackendWithoutDriverFailsStartUp() {
		BackendSelection cuda = Backends.select(Backend.CUDA, 0);
		assumeThat(cuda.availability().available()).as("a CUDA device is present").isFalse();
		this.runner.withPropertyValues("gpu.backend=cuda").run((context) -> {
			assertThat(context).hasFailed();
			assertThat(context.getStartupFailure()).rootCause()
				.isInstanceOf(BackendUnavailableException.class)
				.hasMessageContaining(cuda.availability().reason());
		});
	}

	@Test
	void cpuDeviceOrdinalOutOfRangeFailsStartUp() {
		this.runner.withPropertyValues("gpu.backend=cpu", "gpu.device=2").run((context) -> {
			assertThat(context).hasFailed();
			assertThat(context.getStartupFailure()).rootCause()
				.isInstanceOfSatisfying(DeviceOrdinalOutOfRangeException.class, (ex) -> {
					assertThat(ex.backend()).isEqualTo(Backend.CPU);
					assertThat(ex.ordinal()).isEqualTo(2);
					assertThat(ex.deviceCount()).isEqualTo(1);
				});
		});
	}

	@Test
	void autoFallbackIgnoresTheOrdinalWithoutCuda() {
		assumeThat(Backends.select(Backend.CUDA, 0).availability().available()).as("a CUDA device is present")
			.isFalse();
		this.runner.withPropertyValues("gpu.device=3").run((context) -> {
			GpuContext gpu = context.getBean(GpuContext.class);
			assertThat(gpu.backend()).isEqualTo(Backend.CPU);
			assertThat(gpu.device().ordinal()).isZero();
		});
	}

	@Test
	void defaultPropertiesReachTheContext() {
		this.runner.run((context) -> {
			GpuProperties properties = context.getBean(GpuProperties.class);
			assertThat(properties.isEnabled()).isTrue();
			assertThat(properties.getDevice()).isZero();
			assertThat(properties.getStreams().getPoolSize()).isEqualTo(8);
			assertThat(properties.getStreams().getMaxSize()).isEqualTo(32);
			assertThat(properties.getStreams().getAcquireTimeout()).isEqualTo(Duration.ofSeconds(30));
			assertThat(properties.getStreams().getDefaultStream()).isEqualTo(DefaultStreamMode.PER_THREAD);
			assertThat(properties.getStreams().getLeakDetectionThreshold()).isEqualTo(Duration.ofSeconds(60));
			assertThat(properties.getKernels().getLocations()).containsExactly("classpath:gpu/kernels/");
			assertThat(properties.getKernels().getCompileOptions()).isEmpty();
			assertThat(properties.getKernels().getCacheDir()).isNull();
			assertThat(properties.getMetrics().getKernelTiming()).isEqualTo(KernelTiming.SAMPLED);
			assertThat(properties.getShutdown().getDrainTimeout()).isEqualTo(Duration.ofSeconds(30));
			assertThat(properties.getCpu().getThreads()).isNull();
			GpuContext gpu = context.getBean(GpuContext.class);
			assertThat(gpu.streams().minSize()).isEqualTo(8);
			assertThat(gpu.streams().maxSize()).isEqualTo(32);
			assertThat(gpu.streams().stats().size()).isEqualTo(8);
			assertThat(gpu.streams().acquireTimeout()).isEqualTo(Duration.ofSeconds(30));
			assertThat(gpu.streams().leakDetectionThreshold()).isEqualTo(Duration.ofSeconds(60));
			assertThat(gpu.defaultStreamMode()).isEqualTo(DefaultStreamMode.PER_THREAD);
			assertThat(gpu.kernelTiming()).isEqualTo(KernelTiming.SAMPLED);
			assertThat(gpu.device().ordinal()).isZero();
			assertThat(properties.getCopies().getStagingTimeout()).isEqualTo(Duration.ofSeconds(30));
			assertThat(gpu.hostMemory().stagingBudgetBytes()).isEqualTo(GpuContext.DEFAULT_STAGING_BUDGET)
				.isEqualTo(properties.getCopies().getStagingBudget().toBytes());
		});
	}

	@Test
	void propertiesAreBoundAndApplied() {
		this.runner
			.withPropertyValues("gpu.backend=cpu", "gpu.streams.pool-size=2", "gpu.streams.max-size=4",
					"gpu.streams.acquire-timeout=250ms", "gpu.streams.default-stream=legacy",
					"gpu.streams.leak-detection-threshold=5s",
					"gpu.kernels.locations=classpath:kernels/empty/,file:target/test-classes/kernels/empty/",
					"gpu.kernels.compile-options=-use_fast_math,-lineinfo", "gpu.kernels.cache-dir=/tmp/gpu-kernel-cache",
					"gpu.metrics.kernel-timing=all", "gpu.shutdown.drain-timeout=2s", "gpu.cpu.threads=1",
					"gpu.copies.staging-budget=64MB", "gpu.copies.staging-timeout=5s")
			.run((context) -> {
				GpuProperties properties = context.getBean(GpuProperties.class);
				assertThat(properties.getStreams().getLeakDetectionThreshold()).isEqualTo(Duration.ofSeconds(5));
				assertThat(properties.getKernels().getLocations()).containsExactly("classpath:kernels/empty/",
						"file:target/test-classes/kernels/empty/");
				assertThat(properties.getKernels().getCompileOptions()).containsExactly("-use_fast_math", "-lineinfo");
				assertThat(properties.getKernels().getCacheDir()).isEqualTo(Path.of("/tmp/gpu-kernel-cache"));
				assertThat(properties.getShutdown().getDrainTimeout()).isEqualTo(Duration.ofSeconds(2));
				assertThat(properties.getCpu().getThreads()).isEqualTo(1);
				GpuContext gpu = context.getBean(GpuContext.class);
				assertThat(gpu.streams().stats().size()).isEqualTo(2);
				assertThat(gpu.streams().maxSize()).isEqualTo(4);
				assertThat(gpu.streams().acquireTimeout()).isEqualTo(Duration.ofMillis(250));
				assertThat(gpu.defaultStreamMode()).isEqualTo(DefaultStreamMode.LEGACY);
				assertThat(gpu.kernelTiming()).isEqualTo(KernelTiming.ALL);
				assertThat(properties.getCopies().getStagingTimeout()).isEqualTo(Duration.ofSeconds(5));
				assertThat(gpu.hostMemory().stagingBudgetBytes()).isEqualTo(64L << 20);
			});
	}

	@Test
	void listenerBeanIsPassedToTheContext() {
		this.runner.withUserConfiguration(OneListenerConfiguration.class).run((context) -> {
			RecordingListener listener = context.getBean(RecordingListener.class);
			try (StreamLease lease = context.getBean(StreamPool.class).acquire()) {
				assertThat(lease.stream()).isNotNull();
			}
			assertThat(listener.events).containsExactly("acquired", "released");
		});
	}

	@Test
	void severalListenersAreComposedInOrder() {
		this.runner.withUserConfiguration(TwoListenersConfiguration.class).run((context) -> {
			List<String> calls = context.getBean(CallLog.class).calls;
			try (StreamLease lease = context.getBean(StreamPool.class).acquire()) {
				assertThat(lease.stream()).isNotNull();
			}
			assertThat(calls).containsExactly("first:acquired", "second:acquired", "first:released",
					"second:released");
		});
	}

	@Test
	void customizersRunAfterTheProperties() {
		this.runner.withPropertyValues("gpu.streams.pool-size=2")
			.withBean(GpuContextCustomizer.class, () -> (builder) -> builder.poolSize(5))
			.run((context) -> assertThat(context.getBean(GpuContext.class).streams().stats().size()).isEqualTo(5));
	}

	@Test
	void closingTheApplicationReleasesEverything() {
		GpuContext[] captured = new GpuContext[1];
		this.runner.run((context) -> {
			GpuContext gpu = context.getBean(GpuContext.class);
			captured[0] = gpu;
			try (StreamLease lease = gpu.streams().acquire(); var event = gpu.events().create()) {
				lease.stream().record(event);
				event.synchronize();
			}
			assertThat(gpu.events().live()).isPositive();
		});
		GpuContext gpu = captured[0];
		assertThat(gpu.isClosed()).isTrue();
		assertThat(gpu.streams().stats().size()).isZero();
		assertThat(gpu.events().live()).isZero();
	}

	@Test
	void lifecycleStopsAfterTheWebServer() {
		assertThat(GpuLifecycle.PHASE).isLessThan(WebServerGracefulShutdownLifecycle.SMART_LIFECYCLE_PHASE);
		this.runner.run((context) -> {
			GpuLifecycle lifecycle = context.getBean(GpuLifecycle.class);
			assertThat(lifecycle.isRunning()).isTrue();
			assertThat(lifecycle.getPhase()).isEqualTo(GpuLifecycle.PHASE);
			assertThat(lifecycle.isPauseable()).isFalse();
		});
	}

	@Configuration(proxyBeanMethods = false)
	static class UserContextConfiguration {

		@Bean
		GpuContext userGpuContext() {
			return GpuContext.builder().backend(Backend.CPU).poolSize(1).maxSize(3).open();
		}

	}

	@Configuration(proxyBeanMethods = false)
	static class TwoContextsConfiguration {

		@Bean
		GpuContext firstContext() {
			return GpuContext.builder().backend(Backend.CPU).poolSize(0).maxSize(1).open();
		}

		@Bean
		GpuContext secondContext() {
			return GpuContext.builder().backend(Backend.CPU).poolSize(0).maxSize(1).open();
		}

	}

	@Configuration(proxyBeanMethods = false)
	@Import(TwoContextsConfiguration.class)
	static class PrimaryContextConfiguration {

		@Bean
		@Primary
		GpuContext primaryContext() {
			return GpuContext.builder().backend(Backend.CPU).poolSize(0).maxSize(1).open();
		}

	}

	@Configuration(proxyBeanMethods = false)
	static class UserViewsConfiguration {

		@Bean(destroyMethod = "close")
		GpuContext otherContext() {
			return GpuContext.builder().backend(Backend.CPU).poolSize(1).maxSize(2).open();
		}

		@Bean
		StreamPool userStreamPool(GpuContext otherContext) {
			return otherContext.streams();
		}

		@Bean
		EventRegistry userEventRegistry(GpuContext otherContext) {
			return otherContext.events();
		}

		@Bean
		GpuLauncher userLauncher(GpuContext otherContext) {
			return otherContext.launcher();
		}

	}

	static class RecordingListener implements GpuListener {

		final List<String> events = new CopyOnWriteArrayList<>();

		@Override
		public void leaseAcquired(long waitNanos) {
			this.events.add("acquired");
		}

		@Override
		public void leaseReleased(long heldNanos) {
			this.events.add("released");
		}

	}

	@Configuration(proxyBeanMethods = false)
	static class OneListenerConfiguration {

		@Bean
		RecordingListener recordingListener() {
			return new RecordingListener();
		}

	}

	static class CallLog {

		final List<String> calls = new CopyOnWriteArrayList<>();

	}

	@Configuration(proxyBeanMethods = false)
	static class TwoListenersConfiguration {

		@Bean
		CallLog callLog() {
			return new CallLog();
		}

		@Bean
		@Order(2)
		GpuListener second(CallLog log) {
			return named("second", log.calls);
		}

		@Bean
		@Order(1)
		GpuListener first(CallLog log) {
			return named("first", log.calls);
		}

		private static GpuListener named(String name, List<String> calls) {
			return new GpuListener() {

				@Override
				public void leaseAcquired(long waitNanos) {
					calls.add(name + ":acquired");
				}

				@Override
				public void leaseReleased(long heldNanos) {
					calls.add(name + ":released");
				}

			};
		}

	}

}
