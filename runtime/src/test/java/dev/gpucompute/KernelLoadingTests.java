package dev.gpucompute;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

import org.junit.jupiter.api.Test;

/** Loading kernels once per name, from many threads, without one lock for all names. */
class KernelLoadingTests {

	private static KernelSource source(String name) {
		return KernelSource.named(name).params(ParamType.INT).cpu((block, args) -> {
		});
	}

	@Test
	void concurrentLoadsOfOneNameGiveOneKernelAndOtherNamesLoadToo() throws Exception {
		try (GpuContext context = GpuContext.builder().backend(Backend.CPU).poolSize(0).open()) {
			ExecutorService pool = Executors.newFixedThreadPool(8);
			try {
				CyclicBarrier start = new CyclicBarrier(8);
				List<Future<Kernel>> loads = new ArrayList<>();
				KernelSource shared = source("shared");
				for (int i = 0; i < 8; i++) {
					KernelSource own = source("own" + i);
					loads.add(pool.submit(() -> {
						start.await();
						Kernel kernel = context.launcher().load(shared);
						context.launcher().load(own);
						return kernel;
					}));
				}
				Kernel first = loads.get(0).get();
				for (Future<Kernel> load : loads) {
					assertThat(load.get()).isSameAs(first);
				}
				assertThat(context.launcher().kernels()).hasSize(9);
			}
			finally {
				pool.shutdownNow();
			}
		}
	}

	@Test
	void aDifferentKernelOfALoadedNameIsRejected() {
		try (GpuContext context = GpuContext.builder().backend(Backend.CPU).poolSize(0).open()) {
			KernelSource first = source("twice");
			context.launcher().load(first);
			KernelSource different = KernelSource.named("twice").params(ParamType.FLOAT).cpu((block, args) -> {
			});
			assertThatThrownBy(() -> context.launcher().load(different)).isInstanceOf(GpuException.class)
				.hasMessageContaining("A different kernel named 'twice' is already loaded");
			assertThat(context.launcher().load(first).source()).isSameAs(first);
		}
	}

}
