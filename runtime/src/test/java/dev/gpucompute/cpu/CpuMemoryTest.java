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

	/**
	 * Large buffers go back to the system when freed (Linux: mapped, not kept in malloc's arenas),
	 * also after buffers of that size were freed before, which is when glibc starts keeping them.
	 */
	@Test
	void freedLargeBuffersLeaveTheResidentSet() throws Exception {
		// 16 MiB: below glibc's largest mmap threshold (32 MiB), so malloc would keep it after a free.
		long size = 16L << 20;
		org.junit.jupiter.api.Assumptions.assumeTrue(java.nio.file.Files.isReadable(java.nio.file.Path.of("/proc/self/status")),
				"needs /proc/self/status (Linux)");
		try (GpuContext context = GpuContext.builder().backend(Backend.CPU).open()) {
			for (int round = 0; round < 3; round++) {
				long before = residentBytes();
				try (DeviceBuffer buffer = context.launcher().allocate(size)) {
					// Written on the device side, so that no heap array adds to the resident set.
					buffer.fill((byte) 1, context.launcher().currentStream());
					context.launcher().synchronize();
					assertThat(residentBytes() - before).as("round %d: resident while held", round)
						.isGreaterThan(size / 2);
				}
				context.launcher().synchronize();
				long held = residentBytes() - before;
				assertThat(held).as("round %d: resident after free", round).isLessThan(size / 2);
			}
		}
	}

	private static long residentBytes() throws java.io.IOException {
		for (String line : java.nio.file.Files.readAllLines(java.nio.file.Path.of("/proc/self/status"))) {
			if (line.startsWith("VmRSS:")) {
				return Long.parseLong(line.replaceAll("[^0-9]", "")) * 1024;
			}
		}
		throw new IllegalStateException("no VmRSS");
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
