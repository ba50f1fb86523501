package dev.gpucompute;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;

import org.junit.jupiter.api.Test;
import dev.gpucompute.spi.BackendSelection;
import dev.gpucompute.spi.Backends;

class ContextBuilderTests {

	@Test
	void contradictoryPoolSizesAreRejected() {
		assertThatThrownBy(() -> GpuContext.builder().backend(Backend.CPU).poolSize(10).maxSize(4).open())
			.isInstanceOf(IllegalArgumentException.class)
			.hasMessageContaining("poolSize (10) must not exceed maxSize (4)");
		assertThatThrownBy(() -> GpuContext.builder().backend(Backend.CPU).maxSize(0).open())
			.isInstanceOf(IllegalArgumentException.class);
		assertThatThrownBy(() -> GpuContext.builder().acquireTimeout(Duration.ofSeconds(-1)))
			.isInstanceOf(IllegalArgumentException.class);
	}

	@Test
	void cpuDeviceOrdinalOutOfRangeIsUnavailable() {
		assertThatThrownBy(() -> GpuContext.builder().backend(Backend.CPU).device(3).open())
			.isInstanceOf(BackendUnavailableException.class)
			.hasMessageContaining("stands in for 1 device (gpu.cpu.devices), ordinals 0 to 0; got ordinal 3");
		assertThatThrownBy(() -> GpuContext.builder().backend(Backend.CPU).cpuDevices(3).device(3).open())
			.isInstanceOf(BackendUnavailableException.class)
			.hasMessageContaining("ordinals 0 to 2; got ordinal 3");
		try (GpuContext third = GpuContext.builder().backend(Backend.CPU).cpuDevices(3).device(2).open()) {
			assertThat(third.device().ordinal()).isEqualTo(2);
			assertThat(third.device().uuid()).isEqualTo("CPU-2");
		}
	}

	@Test
	void autoFallsBackToCpuWithTheReasonWhenNoCudaDeviceIsUsable() {
		BackendSelection cuda = Backends.select(Backend.CUDA, 0);
		BackendSelection auto = Backends.select(null, 0);
		if (cuda.availability().available()) {
			assertThat(auto.backend()).isEqualTo(Backend.CUDA);
		}
		else {
			assertThat(auto.backend()).isEqualTo(Backend.CPU);
			assertThat(auto.reason()).startsWith("auto: falling back to CPU because CUDA is unavailable: ")
				.endsWith(cuda.availability().reason());
			try (GpuContext context = GpuContext.builder().open()) {
				assertThat(context.backend()).isEqualTo(Backend.CPU);
				assertThat(context.backendReason()).isEqualTo(auto.reason());
			}
			assertThatThrownBy(() -> GpuContext.builder().backend(Backend.CUDA).open())
				.isInstanceOf(BackendUnavailableException.class)
				.hasMessageContaining(cuda.availability().reason());
		}
	}

	@Test
	void openCreatesThePoolUpFrontAndCloseIsIdempotent() {
		GpuContext context = GpuContext.builder().backend(Backend.CPU).poolSize(3).maxSize(5).open();
		assertThat(context.streams().stats().size()).isEqualTo(3);
		assertThat(context.streams().stats().idle()).isEqualTo(3);
		assertThat(context.device().backend()).isEqualTo(Backend.CPU);
		assertThat(context.isHealthy()).isTrue();
		context.close();
		context.close();
		assertThat(context.streams().stats().size()).isZero();
		assertThat(context.isClosed()).isTrue();
	}

}
