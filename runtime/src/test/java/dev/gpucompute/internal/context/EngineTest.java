package dev.gpucompute.internal.context;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.lang.reflect.Proxy;
import java.util.List;
import java.util.ServiceLoader;

import org.junit.jupiter.api.Test;

import dev.gpucompute.Backend;
import dev.gpucompute.BatchHandler;
import dev.gpucompute.GpuBatcher;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuDevices;
import dev.gpucompute.GpuException;
import dev.gpucompute.GpuRuntime;

/**
 * The door between the API and the implementation: {@link Engine} is what the API finds, and it
 * opens what the API's entry points ask for.
 */
class EngineTest {

	@Test
	void isTheOneImplementationTheApiFinds() {
		assertThat(ServiceLoader.load(GpuRuntime.class).stream().map(ServiceLoader.Provider::type))
			.containsExactly(Engine.class);
	}

	@Test
	void opensContextsAndDevicesOfTheRuntime() {
		try (GpuContext context = GpuContext.builder().backend(Backend.CPU).open()) {
			assertThat(context).isInstanceOf(ContextImpl.class);
		}
		try (GpuDevices devices = GpuDevices.open(GpuContext.builder().backend(Backend.CPU).cpuDevices(2), List.of(0, 1))) {
			assertThat(devices.contexts()).hasSize(2).allSatisfy((context) -> assertThat(context).isInstanceOf(ContextImpl.class));
		}
		assertThat(new Engine().deviceCount(Backend.CPU, 3)).isEqualTo(3);
	}

	@Test
	void refusesToBuildABatcherOnAContextItDidNotOpen() {
		GpuContext foreign = (GpuContext) Proxy.newProxyInstance(getClass().getClassLoader(),
				new Class<?>[] { GpuContext.class }, (proxy, method, args) -> {
					if (method.getName().equals("toString")) {
						return "a test double";
					}
					if (method.getName().equals("launcher")) {
						return null;
					}
					throw new UnsupportedOperationException(method.getName());
				});
		BatchHandler<String, String> handler = (batch) -> batch.items();
		try (GpuContext real = GpuContext.builder().backend(Backend.CPU).open()) {
			GpuBatcher.Settings settings = GpuBatcher.builder(real, handler).settings();
			assertThatThrownBy(() -> new Engine().openBatcher(foreign, handler, "batcher", (item) -> null, settings))
				.isInstanceOf(GpuException.class)
				.hasMessageContaining("a test double was not opened by the gpu-compute runtime");
		}
	}

	@Test
	void buildsABatcherThroughAProxyOfItsOwnContext() throws Exception {
		try (GpuContext real = GpuContext.builder().backend(Backend.CPU).open()) {
			// What Spring hands a @Lazy injection point: an interface proxy forwarding to the bean.
			GpuContext lazy = (GpuContext) Proxy.newProxyInstance(getClass().getClassLoader(),
					new Class<?>[] { GpuContext.class }, (proxy, method, args) -> method.invoke(real, args));
			try (GpuBatcher<String, String> batcher = GpuBatcher.<String, String>builder(lazy, (batch) -> batch.items())
				.name("through-a-proxy")
				.build()) {
				assertThat(batcher.context()).isSameAs(real);
				assertThat(batcher.submit("x").get(10, java.util.concurrent.TimeUnit.SECONDS)).isEqualTo("x");
			}
		}
	}

}
