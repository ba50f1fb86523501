package dev.gpucompute.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.lang.reflect.Proxy;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import org.junit.jupiter.api.Test;

import dev.gpucompute.GpuListener;
import dev.gpucompute.KernelLoad;

/** {@link CompositeGpuListener} passes every callback of {@link GpuListener} on, new ones included. */
class CompositeGpuListenerTests {

	@Test
	void everyCallbackOfTheInterfaceIsPassedOn() throws Exception {
		// Each callback of the interface, called on the composite with its own arguments, must reach both
		// listeners with those arguments, the first listener first. A callback the composite does not
		// override (the interface's empty default) or overrides without passing on reaches neither.
		List<String> seen = new ArrayList<>();
		GpuListener composite = CompositeGpuListener.of(List.of(recording("first", seen), recording("second", seen)));
		int callbacks = 0;
		for (Method method : GpuListener.class.getMethods()) {
			if (Modifier.isStatic(method.getModifiers())) {
				continue;
			}
			Object[] args = sampleArguments(method);
			seen.clear();
			method.invoke(composite, args);
			String call = method.getName() + Arrays.toString(args);
			assertThat(seen).as("%s on the composite", call).containsExactly("first " + call, "second " + call);
			callbacks++;
		}
		assertThat(callbacks).as("callbacks of GpuListener: the ten there are, and any added since")
			.isGreaterThanOrEqualTo(10);
	}

	/** A listener that records each call it gets, by the interface's methods, whatever they are. */
	private static GpuListener recording(String name, List<String> seen) {
		return (GpuListener) Proxy.newProxyInstance(GpuListener.class.getClassLoader(), new Class<?>[] { GpuListener.class },
				(proxy, method, args) -> {
					if (method.getDeclaringClass() == Object.class) {
						return switch (method.getName()) {
							case "equals" -> proxy == args[0];
							case "hashCode" -> System.identityHashCode(proxy);
							default -> name;
						};
					}
					seen.add(name + " " + method.getName() + Arrays.toString(args));
					return null;
				});
	}

	/** Distinct arguments of each type a callback takes; a callback with a new type of argument needs one here. */
	private static Object[] sampleArguments(Method method) {
		Class<?>[] types = method.getParameterTypes();
		Object[] args = new Object[types.length];
		for (int i = 0; i < types.length; i++) {
			Class<?> type = types[i];
			if (type == String.class) {
				args[i] = "k" + i;
			}
			else if (type == boolean.class) {
				args[i] = (i % 2 == 0);
			}
			else if (type == int.class) {
				args[i] = 7 + i;
			}
			else if (type == long.class) {
				args[i] = 1_000L + i;
			}
			else if (type == KernelLoad.class) {
				args[i] = new KernelLoad("k", KernelLoad.Trigger.LAUNCH, Duration.ofMillis(3), Duration.ofMillis(2), true,
						false);
			}
			else {
				throw new AssertionError("no sample argument of " + type + " for " + method + ": add one");
			}
		}
		return args;
	}

	@Test
	void kernelLoadsReachEveryListenerInOrder() {
		List<String> seen = new ArrayList<>();
		GpuListener first = new GpuListener() {
			@Override
			public void kernelLoaded(KernelLoad load) {
				seen.add("first " + load.kernel());
			}
		};
		GpuListener second = new GpuListener() {
			@Override
			public void kernelLoaded(KernelLoad load) {
				seen.add("second " + load.kernel());
			}
		};
		CompositeGpuListener.of(List.of(first, second))
			.kernelLoaded(new KernelLoad("k", KernelLoad.Trigger.LAUNCH, Duration.ofMillis(3), Duration.ofMillis(2), true,
					false));
		assertThat(seen).containsExactly("first k", "second k");
	}

}
