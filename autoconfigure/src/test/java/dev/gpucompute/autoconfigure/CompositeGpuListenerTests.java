package dev.gpucompute.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.reflect.Method;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.Test;

import dev.gpucompute.GpuListener;
import dev.gpucompute.KernelLoad;

/** {@link CompositeGpuListener} passes every callback of {@link GpuListener} on, new ones included. */
class CompositeGpuListenerTests {

	@Test
	void everyCallbackOfTheInterfaceIsPassedOn() throws Exception {
		for (Method method : GpuListener.class.getMethods()) {
			if (!java.lang.reflect.Modifier.isStatic(method.getModifiers())) {
				assertThat(CompositeGpuListener.class.getDeclaredMethod(method.getName(), method.getParameterTypes()))
					.as("CompositeGpuListener overrides %s", method.getName())
					.isNotNull();
			}
		}
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
