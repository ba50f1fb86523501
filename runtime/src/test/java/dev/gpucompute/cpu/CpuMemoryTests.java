package dev.gpucompute.cpu;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.management.BufferPoolMXBean;
import java.lang.management.ManagementFactory;

import org.junit.jupiter.api.Test;

import dev.gpucompute.Backend;
import dev.gpucompute.DeviceBuffer;
import dev.gpucompute.ElementType;
import dev.gpucompute.GpuContext;
import dev.gpucompute.HostArray;

/**
 * The CPU backend's device memory comes from the C allocator (JNA is on this module's test class
 * path), outside the JVM's direct-memory pool, zeroed, and returned when freed or at close.
 */
class CpuMemoryTests {

	private static final long SIZE = 64L << 20;

	@Test
	void deviceMemoryLivesOutsideTheDirectMemoryPoolAndIsZeroed() {
		assertThat(DirectMemory.outsideDirectLimit()).as(DirectMemory.describe()).isTrue();
		long heldBefore = CpuBackendProvider.heldBytes();
		long directBefore = directPoolUsed();
		try (GpuContext context = GpuContext.builder().backend(Backend.CPU).open()) {
			try (DeviceBuffer buffer = context.launcher().allocate(SIZE, ElementType.BYTE)) {
				assertThat(CpuBackendProvider.heldBytes() - heldBefore).isGreaterThanOrEqualTo(SIZE);
				assertThat(directPoolUsed() - directBefore).as("direct pool growth").isLessThan(SIZE);
				long[] back = new long[(int) (SIZE / Long.BYTES)];
				java.util.Arrays.fill(back, 7L);
				buffer.download(HostArray.of(back), context.launcher().currentStream()).join();
				assertThat(java.util.Arrays.stream(back).allMatch((value) -> value == 0)).as("zeroed").isTrue();
			}
			context.launcher().currentStream().synchronize();
		}
		assertThat(CpuBackendProvider.heldBytes()).as("held after close").isEqualTo(heldBefore);
	}

	@Test
	void aBufferLeftOpenIsFreedAtClose() {
		long heldBefore = CpuBackendProvider.heldBytes();
		GpuContext context = GpuContext.builder().backend(Backend.CPU).open();
		context.launcher().allocate(SIZE, ElementType.BYTE);
		assertThat(CpuBackendProvider.heldBytes() - heldBefore).isGreaterThanOrEqualTo(SIZE);
		context.close();
		assertThat(CpuBackendProvider.heldBytes()).isEqualTo(heldBefore);
	}

	/**
	 * Large buffers go back to the system when freed (Linux: unmapped, not kept in malloc's arenas),
	 * also after buffers of that size were freed before, which is when glibc starts keeping them:
	 * after the free, no mapping of the process covers the buffer's address any more.
	 */
	@Test
	void freedLargeBuffersAreUnmapped() throws Exception {
		java.nio.file.Path maps = java.nio.file.Path.of("/proc/self/maps");
		org.junit.jupiter.api.Assumptions.assumeTrue(java.nio.file.Files.isReadable(maps), "needs /proc/self/maps (Linux)");
		// 16 MiB: below glibc's largest mmap threshold (32 MiB), so malloc would keep it after a free.
		int size = 16 << 20;
		for (int round = 0; round < 3; round++) {
			java.nio.ByteBuffer buffer = DirectMemory.allocate(size);
			long address = com.sun.jna.Pointer.nativeValue(com.sun.jna.Native.getDirectBufferPointer(buffer));
			assertThat(isMapped(maps, address)).as("round %d: mapped while held", round).isTrue();
			DirectMemory.free(buffer);
			assertThat(isMapped(maps, address)).as("round %d: still mapped after free", round).isFalse();
		}
	}

	private static boolean isMapped(java.nio.file.Path maps, long address) throws java.io.IOException {
		for (String line : java.nio.file.Files.readAllLines(maps)) {
			String[] range = line.substring(0, line.indexOf(' ')).split("-");
			long start = Long.parseUnsignedLong(range[0], 16);
			long end = Long.parseUnsignedLong(range[1], 16);
			if (Long.compareUnsigned(address, start) >= 0 && Long.compareUnsigned(address, end) < 0) {
				return true;
			}
		}
		return false;
	}

	@Test
	void theDefaultBudgetIsNotBoundByTheHeap() {
		assertThat(CpuBackendProvider.machineMemoryBudget()).isGreaterThanOrEqualTo(Runtime.getRuntime().maxMemory());
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
