package dev.gpucompute.cpu;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.management.BufferPoolMXBean;
import java.lang.management.ManagementFactory;

import org.junit.jupiter.api.Test;

import dev.gpucompute.Backend;
import dev.gpucompute.DeviceBuffer;
import dev.gpucompute.GpuContext;

/**
 * The CPU backend's device memory comes from the C allocator (JNA is on this module's test class
 * path), outside the JVM's direct-memory pool, zeroed, and returned when freed or at close.
 */
class CpuMemoryTest {

	private static final long SIZE = 64L << 20;

	@Test
	void deviceMemoryLivesOutsideTheDirectMemoryPoolAndIsZeroed() {
		assertThat(DirectMemory.outsideDirectLimit()).as(DirectMemory.describe()).isTrue();
		long heldBefore = CpuBackendProvider.heldBytes();
		long directBefore = directPoolUsed();
		try (GpuContext context = GpuContext.builder().backend(Backend.CPU).open()) {
			try (DeviceBuffer buffer = context.launcher().allocate(SIZE)) {
				assertThat(CpuBackendProvider.heldBytes() - heldBefore).isGreaterThanOrEqualTo(SIZE);
				assertThat(directPoolUsed() - directBefore).as("direct pool growth").isLessThan(SIZE);
				long[] back = new long[(int) (SIZE / Long.BYTES)];
				java.util.Arrays.fill(back, 7L);
				buffer.download(back, context.launcher().currentStream()).join();
				assertThat(java.util.Arrays.stream(back).allMatch((value) -> value == 0)).as("zeroed").isTrue();
			}
			context.launcher().synchronize();
		}
		assertThat(CpuBackendProvider.heldBytes()).as("held after close").isEqualTo(heldBefore);
	}

	@Test
	void aBufferLeftOpenIsFreedAtClose() {
		long heldBefore = CpuBackendProvider.heldBytes();
		GpuContext context = GpuContext.builder().backend(Backend.CPU).open();
		context.launcher().allocate(SIZE);
		assertThat(CpuBackendProvider.heldBytes() - heldBefore).isGreaterThanOrEqualTo(SIZE);
		context.close();
		assertThat(CpuBackendProvider.heldBytes()).isEqualTo(heldBefore);
	}

	@Test
	void theDefaultBudgetIsNotBoundByTheHeap() {
		assertThat(CpuBackendProvider.defaultMemoryBudget()).isGreaterThanOrEqualTo(Runtime.getRuntime().maxMemory());
	}

	private static long directPoolUsed() {
		for (BufferPoolMXBean pool : ManagementFactory.getPlatformMXBeans(BufferPoolMXBean.class)) {
			if (pool.getName().equals("direct")) {
				return pool.getMemoryUsed();
			}
		}
		return 0;
	}

}
