package dev.gpucompute.internal.context;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.lang.reflect.Proxy;
import java.util.List;

import org.junit.jupiter.api.Test;

import dev.gpucompute.Backend;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuDevices;
import dev.gpucompute.GpuException;
import dev.gpucompute.batch.BatchHandler;
import dev.gpucompute.batch.GpuBatcher;

/**
 * The door between the API and the implementation: {@link Engine} is what the API finds, and it
 * opens what the API's entry points ask for.
 */
class EngineTests {

	/** Every door the API looks up by name is here with the signature it expects (no version mix-up). */
	@Test
	void hasEveryMethodTheApiLooksUp() throws Exception {
		Class<?> doors = Class.forName("dev.gpucompute.GpuContextBuilder$Implementation");
		List<String> names = new java.util.ArrayList<>();
		for (java.lang.reflect.Field field : doors.getDeclaredFields()) {
			if (java.lang.reflect.Modifier.isStatic(field.getModifiers()) && field.getType() == doors) {
				field.setAccessible(true);
				Object door = field.get(null);
				java.lang.reflect.Method found = doors.getDeclaredMethod("found");
				found.setAccessible(true);
				assertThat(found.invoke(door)).as(field.getName()).isNotNull();
				names.add(field.getName());
			}
		}
		assertThat(names).contains("OPEN", "OPEN_DEVICES", "DEVICE_COUNT", "START_LEAK_TRACKER");
	}

	@Test
	void opensContextsAndDevicesOfTheRuntime() {
		try (GpuContext context = GpuContext.builder().backend(Backend.CPU).open()) {
			assertThat(context).isInstanceOf(ContextImpl.class);
		}
		try (GpuDevices devices = GpuDevices.open(GpuContext.builder().backend(Backend.CPU).cpuDevices(2), List.of(0, 1))) {
			assertThat(devices.contexts()).hasSize(2).allSatisfy((context) -> assertThat(context).isInstanceOf(ContextImpl.class));
		}
		assertThat(Engine.deviceCount(Backend.CPU, 3)).isEqualTo(3);
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
			assertThatThrownBy(() -> Engine.openBatcher(foreign, handler, "batcher", (item) -> null, settings))
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
