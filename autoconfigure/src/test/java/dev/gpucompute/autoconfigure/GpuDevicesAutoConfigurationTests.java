package dev.gpucompute.autoconfigure;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import org.springframework.beans.factory.DisposableBean;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

import dev.gpucompute.Backend;
import dev.gpucompute.ContextClosedException;
import dev.gpucompute.DeviceBuffer;
import dev.gpucompute.ElementType;
import dev.gpucompute.EventRegistry;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuDevices;
import dev.gpucompute.GpuLauncher;
import dev.gpucompute.HostArray;
import dev.gpucompute.KernelSource;
import dev.gpucompute.LaunchConfig;
import dev.gpucompute.ParamType;
import dev.gpucompute.StreamLease;
import dev.gpucompute.StreamPool;
import dev.gpucompute.autoconfigure.kernels.GpuKernels;
import dev.gpucompute.listener.GpuListener;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Several devices in one application ({@code gpu.devices}), on the CPU backend standing in for three
 * devices ({@code gpu.cpu.devices=3}): the {@link GpuDevices} bean, the single-device beans on the
 * primary device, listeners, customizers and kernels per device, the drain of every device, and who
 * closes what.
 */
@ExtendWith(OutputCaptureExtension.class)
class GpuDevicesAutoConfigurationTests {

	private final ApplicationContextRunner runner = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(GpuAutoConfiguration.class))
		.withPropertyValues("gpu.backend=cpu", "gpu.cpu.devices=3", "gpu.cpu.threads=1", "gpu.streams.pool-size=1",
				"gpu.streams.max-size=4", "gpu.kernels.locations=");

	@Test
	void allOpensOneContextPerDeviceAndTheSingleDeviceBeansAreThePrimarys() {
		this.runner.withPropertyValues("gpu.devices=all").run((context) -> {
			assertThat(context).hasSingleBean(GpuDevices.class)
				.hasSingleBean(GpuContext.class)
				.hasSingleBean(StreamPool.class)
				.hasSingleBean(EventRegistry.class)
				.hasSingleBean(GpuLauncher.class)
				.hasSingleBean(GpuKernels.class)
				.hasSingleBean(GpuLifecycle.class);
			GpuDevices devices = context.getBean(GpuDevices.class);
			assertThat(devices.ordinals()).containsExactly(0, 1, 2);
			assertThat(devices.contexts()).extracting((gpu) -> gpu.device().ordinal()).containsExactly(0, 1, 2);
			assertThat(devices.contexts()).extracting((gpu) -> gpu.device().uuid())
				.containsExactly("CPU-0", "CPU-1", "CPU-2");
			GpuContext primary = context.getBean(GpuContext.class);
			assertThat(primary).isSameAs(devices.primary()).isSameAs(devices.get(0));
			assertThat(context.getBean(StreamPool.class)).isSameAs(primary.streams());
			assertThat(context.getBean(EventRegistry.class)).isSameAs(primary.events());
			assertThat(context.getBean(GpuLauncher.class)).isSameAs(primary.launcher());
			for (GpuContext gpu : devices.contexts()) {
				// The properties reach every device, each with its own pool.
				assertThat(gpu.backend()).isEqualTo(Backend.CPU);
				assertThat(gpu.streams().maxSize()).isEqualTo(4);
				assertThat(gpu.streams().stats().size()).isEqualTo(1);
				assertThat(gpu.device().multiprocessors()).as("worker threads of device %d", gpu.device().ordinal())
					.isEqualTo(1);
			}
			assertThat(devices.get(1).streams()).isNotSameAs(devices.get(2).streams());
		});
	}

	@Test
	void listedOrdinalsOpenInTheOrderGivenAndTheFirstIsThePrimary() {
		this.runner.withPropertyValues("gpu.devices=2,0").run((context) -> {
			GpuDevices devices = context.getBean(GpuDevices.class);
			assertThat(devices.contexts()).extracting((gpu) -> gpu.device().ordinal()).containsExactly(2, 0);
			assertThat(context.getBean(GpuContext.class).device().ordinal()).isEqualTo(2);
		});
	}

	@Test
	void yamlStyleListIsAcceptedToo() {
		this.runner.withPropertyValues("gpu.devices[0]=1", "gpu.devices[1]=2").run((context) -> {
			assertThat(context.getBean(GpuDevices.class).ordinals()).containsExactly(1, 2);
			assertThat(context.getBean(GpuContext.class).device().ordinal()).isEqualTo(1);
		});
	}

	@Test
	void gpuDeviceNamesThePrimaryDeviceAmongAll() {
		this.runner.withPropertyValues("gpu.devices=ALL", "gpu.device=1").run((context) -> {
			GpuDevices devices = context.getBean(GpuDevices.class);
			assertThat(devices.contexts()).extracting((gpu) -> gpu.device().ordinal()).containsExactly(1, 0, 2);
			assertThat(context.getBean(GpuContext.class)).isSameAs(devices.get(1));
		});
	}

	@Test
	void gpuDeviceNamesThePrimaryDeviceAmongTheListed() {
		this.runner.withPropertyValues("gpu.devices=0,2", "gpu.device=2").run((context) -> {
			GpuDevices devices = context.getBean(GpuDevices.class);
			assertThat(devices.contexts()).extracting((gpu) -> gpu.device().ordinal()).containsExactly(2, 0);
			assertThat(context.getBean(GpuContext.class)).isSameAs(devices.get(2));
		});
	}

	@Test
	void withoutGpuDevicesTheOneDeviceGpuDeviceNamesIsOpened() {
		this.runner.withPropertyValues("gpu.device=1").run((context) -> {
			GpuDevices devices = context.getBean(GpuDevices.class);
			assertThat(devices.size()).isEqualTo(1);
			assertThat(devices.primary()).isSameAs(context.getBean(GpuContext.class));
			assertThat(devices.primary().device().ordinal()).isEqualTo(1);
		});
	}

	@Test
	void byDefaultOneDeviceInAGpuDevicesBean() {
		new ApplicationContextRunner().withConfiguration(AutoConfigurations.of(GpuAutoConfiguration.class))
			.withPropertyValues("gpu.backend=cpu", "gpu.streams.pool-size=1")
			.run((context) -> {
				GpuDevices devices = context.getBean(GpuDevices.class);
				assertThat(devices.contexts()).containsExactly(context.getBean(GpuContext.class));
				assertThat(devices.primary().device().ordinal()).isZero();
				assertThat(devices.primary().device().uuid()).isEqualTo("CPU-0");
			});
	}

	@Test
	void placementSkipsADeviceThatIsDown() {
		this.runner.withPropertyValues("gpu.devices=all").run((context) -> {
			GpuDevices devices = context.getBean(GpuDevices.class);
			GpuContext home = devices.forKey("collection-42");
			assertThat(devices.forKey("collection-42")).isSameAs(home);
			home.close();
			assertThat(devices.forKey("collection-42")).isNotSameAs(home);
			for (int i = 0; i < 6; i++) {
				assertThat(devices.leastLoaded()).isNotSameAs(home);
			}
		});
	}

	@Test
	void onlyTheGpuDevicesBeanClosesTheContexts() {
		this.runner.withPropertyValues("gpu.devices=all").run((context) -> {
			// The context bean is a view of the primary device: no destroy method of its own, so no second close.
			assertThat(context.getBeanFactory().getBeanDefinition("gpuContext").getDestroyMethodName()).isNullOrEmpty();
			assertThat(context.getBeanFactory().getBeanDefinition("gpuDevices").getDestroyMethodName()).isEqualTo("close");
		});
	}

	@Test
	void closingTheApplicationClosesEveryDeviceAfterTheBeansThatUseThem() {
		List<GpuContext> captured = new ArrayList<>();
		this.runner.withPropertyValues("gpu.devices=all")
			.withUserConfiguration(BufferOnDeviceTwo.class)
			.run((context) -> {
				captured.addAll(context.getBean(GpuDevices.class).contexts());
				assertThat(context.getBean(BufferHolder.class).buffer.isClosed()).isFalse();
				assertThat(captured.get(2).memory().usedBytes()).isEqualTo(1024);
				assertThat(captured.get(1).memory().usedBytes()).isZero();
			});
		assertThat(captured).hasSize(3).allSatisfy((gpu) -> {
			assertThat(gpu.isClosed()).isTrue();
			assertThat(gpu.streams().stats().size()).isZero();
			assertThat(gpu.events().live()).isZero();
		});
		// The holder closed its buffer while device 2 was still open, then the devices were closed.
		assertThat(BufferOnDeviceTwo.log).containsExactly("buffer closed on an open device, 0 bytes left");
	}

	@Test
	void aListenerBeanHearsEveryDeviceAndAFactorysListenerOnlyItsOwn() {
		this.runner.withPropertyValues("gpu.devices=all").withUserConfiguration(ListenersConfiguration.class).run((context) -> {
			GpuDevices devices = context.getBean(GpuDevices.class);
			ListenersConfiguration listeners = context.getBean(ListenersConfiguration.class);
			assertThat(listeners.created).containsExactly(0, 1, 2);
			for (int ordinal : List.of(1, 2, 2)) {
				try (StreamLease lease = devices.get(ordinal).streams().acquire()) {
					assertThat(lease.stream()).isNotNull();
				}
			}
			assertThat(listeners.acquiresOnAnyDevice).hasValue(3);
			assertThat(listeners.perDevice.get(0)).isEmpty();
			assertThat(listeners.perDevice.get(1)).containsExactly("acquired");
			assertThat(listeners.perDevice.get(2)).containsExactly("acquired", "acquired");
		});
	}

	@Test
	void customizersApplyToEveryDevice() {
		this.runner.withPropertyValues("gpu.devices=all")
			.withBean(GpuContextCustomizer.class, () -> (builder) -> builder.poolSize(3))
			.run((context) -> assertThat(context.getBean(GpuDevices.class).contexts())
				.allSatisfy((gpu) -> assertThat(gpu.streams().stats().size()).isEqualTo(3)));
	}

	@Test
	void startUpKernelsAreLoadedOnEveryDevice() {
		this.runner.withPropertyValues("gpu.devices=all", "gpu.kernels.locations=classpath:gpu/kernels/")
			.withClassLoader(TestKernels.withDefaultLocationKernels())
			.withBean("saxpyKernel", KernelSource.class, TestKernels::saxpyCpu)
			.withBean("fill", KernelSource.class, () -> KernelSource.named("fill")
				.params(ParamType.INT, ParamType.FLOAT, ParamType.BUFFER)
				.cpu((block, args) -> {
					for (int i = (int) block.firstIndex(); i < block.endIndex(args.i32(0)); i++) {
						args.floats(2).put(i, args.f32(1));
					}
				}))
			.run((context) -> {
				GpuKernels kernels = context.getBean(GpuKernels.class);
				assertThat(kernels.devices()).isEqualTo(3);
				assertThat(kernels.kernels()).containsOnlyKeys("fill", "saxpy");
				for (GpuContext gpu : context.getBean(GpuDevices.class).contexts()) {
					GpuLauncher launcher = gpu.launcher();
					assertThat(launcher.kernels()).extracting((kernel) -> kernel.name())
						.containsExactlyInAnyOrder("fill", "saxpy");
					float[] y = new float[4];
					float value = gpu.device().ordinal() + 0.5f;
					try (StreamLease lease = gpu.streams().acquire();
							DeviceBuffer out = launcher.allocate(16, ElementType.BYTE)) {
						launcher.launch(lease.stream(), launcher.kernel("fill"), LaunchConfig.linear(4, 2), 4, value, out);
						out.download(HostArray.of(y), lease.stream()).join();
					}
					assertThat(y).containsOnly(value);
				}
			});
	}

	@Test
	void stopDrainsEveryDeviceInParallelAndLogsALinePerDevice(CapturedOutput output) throws Exception {
		CountDownLatch started = new CountDownLatch(2);
		CountDownLatch release = new CountDownLatch(1);
		this.runner.withPropertyValues("gpu.devices=all", "gpu.shutdown.drain-timeout=30s")
			.withBean("blocking", KernelSource.class, () -> KernelSource.named("blocking").params(ParamType.INT)
				.cpu((block, args) -> {
					started.countDown();
					try {
						release.await(30, TimeUnit.SECONDS);
					}
					catch (InterruptedException ex) {
						Thread.currentThread().interrupt();
					}
				}))
			.run((context) -> {
				GpuDevices devices = context.getBean(GpuDevices.class);
				for (int ordinal : List.of(1, 2)) {
					GpuContext gpu = devices.get(ordinal);
					try (StreamLease lease = gpu.streams().acquire()) {
						gpu.launcher().launch(lease.stream(), gpu.launcher().kernel("blocking"), LaunchConfig.linear(1, 1), 1);
					}
				}
				assertThat(started.await(10, TimeUnit.SECONDS)).isTrue();
				Thread closer = new Thread(context::close, "closer");
				closer.start();
				// Device 1 is still busy, yet every pool has already stopped: all were stopped before any wait.
				await().atMost(Duration.ofSeconds(10))
					.until(() -> devices.contexts().stream().allMatch((gpu) -> leasesRefused(gpu.streams())));
				assertThat(devices.contexts()).noneMatch(GpuContext::isClosed);
				assertThat(closer.isAlive()).isTrue();
				release.countDown();
				closer.join(10_000);
				assertThat(closer.isAlive()).isFalse();
				assertThat(devices.contexts()).allMatch(GpuContext::isClosed);
			});
		List<String> lines = output.getOut().lines().filter((line) -> line.contains("Drained GPU work")).toList();
		assertThat(lines).hasSize(3).allSatisfy((line) -> assertThat(line).contains(" INFO "));
		assertThat(lines.get(0)).contains("Drained GPU work of CPU device 0 (");
		assertThat(lines.get(1)).contains("Drained GPU work of CPU device 1 (");
		assertThat(lines.get(2)).contains("Drained GPU work of CPU device 2 (");
	}

	@Test
	void userDevicesWinAndTheContextBeanIsTheirPrimary() {
		this.runner.withUserConfiguration(UserDevicesConfiguration.class).run((context) -> {
			GpuDevices devices = context.getBean(GpuDevices.class);
			assertThat(context).hasSingleBean(GpuDevices.class).hasBean("userDevices").doesNotHaveBean("gpuDevices");
			assertThat(devices.ordinals()).containsExactly(0, 1);
			assertThat(context.getBean(GpuContext.class)).isSameAs(devices.primary());
			assertThat(context.getBean(GpuLauncher.class)).isSameAs(devices.primary().launcher());
		});
	}

	@Test
	void userContextMeansNoGpuDevicesBean() {
		this.runner.withBean("userContext", GpuContext.class,
				() -> GpuContext.builder().backend(Backend.CPU).poolSize(0).cpuThreads(1).open())
			.run((context) -> assertThat(context).hasSingleBean(GpuContext.class)
				.doesNotHaveBean(GpuDevices.class)
				.hasSingleBean(GpuLifecycle.class));
	}

	private static boolean leasesRefused(StreamPool pool) {
		try (StreamLease lease = pool.acquire(Duration.ZERO)) {
			return false;
		}
		catch (ContextClosedException ex) {
			return true;
		}
	}

	static final class BufferHolder implements DisposableBean {

		private final DeviceBuffer buffer;

		private final GpuContext device;

		private final List<String> log;

		BufferHolder(GpuContext device, List<String> log) {
			this.device = device;
			this.buffer = device.launcher().allocate(1024, ElementType.BYTE);
			this.log = log;
		}

		@Override
		public void destroy() {
			this.buffer.close();
			this.device.synchronizeDevice();
			this.log.add("buffer closed on an " + (this.device.isClosed() ? "closed" : "open") + " device, "
					+ this.device.memory().usedBytes() + " bytes left");
		}

	}

	@Configuration(proxyBeanMethods = false)
	static class BufferOnDeviceTwo {

		static final List<String> log = new CopyOnWriteArrayList<>();

		@Bean
		BufferHolder bufferHolder(GpuDevices devices) {
			log.clear();
			return new BufferHolder(devices.get(2), log);
		}

	}

	@Configuration(proxyBeanMethods = false)
	static class ListenersConfiguration {

		final List<Integer> created = new CopyOnWriteArrayList<>();

		final Map<Integer, List<String>> perDevice = new ConcurrentHashMap<>();

		final AtomicInteger acquiresOnAnyDevice = new AtomicInteger();

		@Bean
		GpuListener countingListener() {
			return new GpuListener() {

				@Override
				public void leaseAcquired(long waitNanos) {
					ListenersConfiguration.this.acquiresOnAnyDevice.incrementAndGet();
				}

			};
		}

		@Bean
		GpuListenerFactory perDeviceListeners() {
			return (ordinal) -> {
				this.created.add(ordinal);
				List<String> events = new CopyOnWriteArrayList<>();
				this.perDevice.put(ordinal, events);
				return new GpuListener() {

					@Override
					public void leaseAcquired(long waitNanos) {
						events.add("acquired");
					}

				};
			};
		}

	}

	@Configuration(proxyBeanMethods = false)
	static class UserDevicesConfiguration {

		@Bean
		GpuDevices userDevices() {
			return GpuDevices.open(GpuContext.builder().backend(Backend.CPU).cpuDevices(2).poolSize(0).cpuThreads(1),
					List.of(0, 1));
		}

	}

}
