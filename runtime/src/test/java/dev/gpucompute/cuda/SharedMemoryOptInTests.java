package dev.gpucompute.cuda;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

import dev.gpucompute.InvalidLaunchConfigException;

/**
 * The dynamic shared memory opt-in counts the kernel's static shared memory: CUDA's per-block limit is
 * static plus dynamic. The figures are an H100's (227 KiB per block with an opt-in).
 */
class SharedMemoryOptInTests {

	private static final int H100_PER_BLOCK = 227 * 1024;

	@Test
	void aKernelStartsWithWhatIsLeftOf48KiBBesideItsStaticSharedMemory() {
		assertThat(SharedMemoryOptIn.defaultDynamicLimit(0)).isEqualTo(48 * 1024);
		assertThat(SharedMemoryOptIn.defaultDynamicLimit(32 * 1024)).isEqualTo(16 * 1024);
		assertThat(SharedMemoryOptIn.defaultDynamicLimit(48 * 1024)).isZero();
	}

	@Test
	void noOptInWhileTheCurrentLimitCoversTheLaunch() {
		assertThat(SharedMemoryOptIn.target("k", 16 * 1024, 32 * 1024, 16 * 1024, H100_PER_BLOCK)).isEqualTo(-1);
		assertThat(SharedMemoryOptIn.target("k", 0, 0, 48 * 1024, H100_PER_BLOCK)).isEqualTo(-1);
	}

	@Test
	void dynamicMemoryUnder48KiBStillNeedsAnOptInWhenStaticMemoryTakesTheRest() {
		// 32 KiB static + 32 KiB dynamic = 64 KiB: over the default 48 KiB although the dynamic part is under it.
		assertThat(SharedMemoryOptIn.target("k", 32 * 1024, 32 * 1024, 16 * 1024, H100_PER_BLOCK)).isEqualTo(32 * 1024);
	}

	@Test
	void theLargestLaunchLeavesRoomForTheStaticPart() {
		int staticBytes = 32 * 1024;
		assertThat(SharedMemoryOptIn.target("k", H100_PER_BLOCK - staticBytes, staticBytes, 16 * 1024, H100_PER_BLOCK))
			.isEqualTo(H100_PER_BLOCK - staticBytes);
		assertThatThrownBy(() -> SharedMemoryOptIn.target("tile", H100_PER_BLOCK - staticBytes + 1, staticBytes, 16 * 1024,
				H100_PER_BLOCK))
			.isInstanceOf(InvalidLaunchConfigException.class)
			.hasMessageContaining("Kernel 'tile' needs " + (H100_PER_BLOCK + 1) + " bytes of shared memory per block")
			.hasMessageContaining(staticBytes + " static")
			.hasMessageContaining("the device allows " + H100_PER_BLOCK + " per block")
			.hasMessageContaining("at most " + (H100_PER_BLOCK - staticBytes) + " dynamic");
	}

	@Test
	void hugeRequestsDoNotOverflow() {
		assertThatThrownBy(() -> SharedMemoryOptIn.target("k", Integer.MAX_VALUE, 1024, 0, H100_PER_BLOCK))
			.isInstanceOf(InvalidLaunchConfigException.class)
			.hasMessageContaining("needs " + (Integer.MAX_VALUE + 1024L) + " bytes");
	}

}
