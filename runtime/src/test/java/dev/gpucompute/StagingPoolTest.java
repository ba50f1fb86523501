package dev.gpucompute;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.ByteBuffer;

import org.junit.jupiter.api.Test;

class StagingPoolTest {

	@Test
	void reusesBuffersBySizeClassUpToTheCap() {
		try (GpuContext context = GpuContext.builder().backend(Backend.CPU).cpuThreads(1).stagingCache(64 * 1024)
			.open()) {
			StagingPool pool = context.staging();
			ByteBuffer first = pool.take(5000);
			assertThat(first.capacity()).isEqualTo(8192);
			assertThat(first.position()).isZero();
			pool.give(first);
			assertThat(pool.cachedBytes()).isEqualTo(8192);
			assertThat(pool.take(6000)).isSameAs(first);
			assertThat(pool.cachedBytes()).isZero();
			ByteBuffer small = pool.take(1);
			assertThat(small.capacity()).isEqualTo(4096);
			ByteBuffer big = pool.take(100_000);
			pool.give(big);
			assertThat(pool.cachedBytes()).as("over the cap: freed, not kept").isZero();
			pool.give(small);
			pool.give(first);
			assertThat(pool.cachedBytes()).isEqualTo(4096 + 8192);
		}
	}

	@Test
	void copiesReuseStagingAndStillCopyTheRightBytes() {
		try (GpuContext context = GpuContext.builder().backend(Backend.CPU).cpuThreads(2).open();
				DeviceBuffer buffer = context.launcher().allocate(4 * 1000)) {
			for (int round = 0; round < 5; round++) {
				float[] data = new float[1000];
				for (int i = 0; i < data.length; i++) {
					data[i] = round * 1000 + i;
				}
				buffer.upload(data, buffer.stream()).join();
				float[] back = new float[1000];
				buffer.download(back, buffer.stream()).join();
				assertThat(back).containsExactly(data);
			}
			assertThat(context.staging().cachedBytes()).isPositive();
		}
	}

}
