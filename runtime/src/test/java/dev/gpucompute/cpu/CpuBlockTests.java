package dev.gpucompute.cpu;

import org.junit.jupiter.api.Test;

import dev.gpucompute.Dim3;

import static org.assertj.core.api.Assertions.assertThat;

class CpuBlockTests {

	@Test
	void advancingVisitsTheSameBlocksAsMovingToEachLinearIndex() {
		Dim3 grid = Dim3.of(7, 5, 3);
		CpuBlock walked = new CpuBlock(grid, Dim3.of(1), 0);
		CpuBlock moved = new CpuBlock(grid, Dim3.of(1), 0);
		walked.moveTo(0);
		for (long linear = 0; linear < grid.volume(); linear++) {
			if (linear > 0) {
				walked.advance();
			}
			moved.moveTo(linear);
			assertThat(new int[] { walked.x(), walked.y(), walked.z() }).as("block %d", linear)
				.containsExactly(moved.x(), moved.y(), moved.z());
			assertThat(walked.x() + 7 * (walked.y() + 5 * walked.z())).isEqualTo(linear);
		}
	}

	@Test
	void advancingClearsSharedMemory() {
		CpuBlock block = new CpuBlock(Dim3.of(4), Dim3.of(1), 8);
		block.moveTo(0);
		block.sharedMemory().putLong(0, -1L);
		block.advance();
		assertThat(block.sharedMemory().getLong(0)).isZero();
	}

}
