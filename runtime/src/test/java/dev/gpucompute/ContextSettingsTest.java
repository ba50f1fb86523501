package dev.gpucompute;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.List;

import org.junit.jupiter.api.Test;

/**
 * {@link ContextSettings} made without the builder (it is a public record, and {@link GpuRuntime#open}
 * is public) are refused when the runtime could not open with them, naming the value, instead of
 * failing later inside the runtime.
 */
class ContextSettingsTest {

	private static final ContextSettings DEFAULTS = GpuContext.builder().backend(Backend.CPU).settings();

	@Test
	void theBuildersSettingsPassAndOpen() {
		assertThat(DEFAULTS.priorityLimits()).hasSize(StreamPriority.values().length);
		try (GpuContext context = GpuContextBuilder.runtime().open(DEFAULTS.withDevice(0))) {
			assertThat(context.isClosed()).isFalse();
		}
	}

	@Test
	void aLimitMissingForAPriorityIsRefused() {
		assertThatThrownBy(() -> withPriorityLimits(List.of(4, 4, 4))).isInstanceOf(IllegalArgumentException.class)
			.hasMessageContaining("one limit per StreamPriority");
		assertThatThrownBy(() -> withPriorityLimits(List.of(0, 4))).isInstanceOf(IllegalArgumentException.class)
			.hasMessageContaining("priorityLimits must be between 1 and");
	}

	@Test
	void missingValuesAndNegativeDurationsAreRefusedByName() {
		ContextSettings d = DEFAULTS;
		assertThatThrownBy(() -> new ContextSettings(d.backend(), d.device(), d.poolSize(), d.maxSize(),
				d.acquireTimeout(), d.defaultStream(), d.leakDetectionThreshold(), d.drainTimeout(), d.cpuThreads(),
				d.cpuMemoryBudget(), d.memoryPoolReleaseThreshold(), d.compileOptions(), d.kernelCacheDir(),
				d.kernelTiming(), null, d.utilizationSamplePeriod(), d.utilizationWindow(), d.stagingCacheBytes(),
				d.copyChunkBytes(), d.stagingBudgetBytes(), d.stagingTimeout(), d.copyThreads(), d.waitSpinNanos(),
				d.cpuDevices(), d.kernels(), d.kernelLoadWaitThreshold(), d.priorityLimits()))
			.isInstanceOf(NullPointerException.class)
			.hasMessage("listener");
		assertThatThrownBy(() -> new ContextSettings(d.backend(), d.device(), d.poolSize(), d.maxSize(),
				Duration.ofSeconds(-1), d.defaultStream(), d.leakDetectionThreshold(), d.drainTimeout(), d.cpuThreads(),
				d.cpuMemoryBudget(), d.memoryPoolReleaseThreshold(), d.compileOptions(), d.kernelCacheDir(),
				d.kernelTiming(), d.listener(), d.utilizationSamplePeriod(), d.utilizationWindow(), d.stagingCacheBytes(),
				d.copyChunkBytes(), d.stagingBudgetBytes(), d.stagingTimeout(), d.copyThreads(), d.waitSpinNanos(),
				d.cpuDevices(), d.kernels(), d.kernelLoadWaitThreshold(), d.priorityLimits()))
			.isInstanceOf(IllegalArgumentException.class)
			.hasMessageContaining("acquireTimeout must not be negative");
	}

	@Test
	void aCopyChunkThatIsNotWholeBlocksIsRefused() {
		// The copy pipeline moves whole elements per chunk: 4098 bytes would split a long across two.
		for (long chunk : new long[] { 4098, 0, GpuContext.MAX_COPY_CHUNK + GpuContext.MIN_COPY_CHUNK }) {
			assertThatThrownBy(() -> withCopyChunk(chunk)).isInstanceOf(IllegalArgumentException.class)
				.hasMessage("copyChunkSize must be a multiple of 4096 between 4096 and 1073741824, got " + chunk);
		}
		assertThat(withCopyChunk(8192).copyChunkBytes()).isEqualTo(8192);
	}

	private static ContextSettings withCopyChunk(long chunk) {
		ContextSettings d = DEFAULTS;
		return new ContextSettings(d.backend(), d.device(), d.poolSize(), d.maxSize(), d.acquireTimeout(),
				d.defaultStream(), d.leakDetectionThreshold(), d.drainTimeout(), d.cpuThreads(), d.cpuMemoryBudget(),
				d.memoryPoolReleaseThreshold(), d.compileOptions(), d.kernelCacheDir(), d.kernelTiming(), d.listener(),
				d.utilizationSamplePeriod(), d.utilizationWindow(), d.stagingCacheBytes(), chunk, d.stagingBudgetBytes(),
				d.stagingTimeout(), d.copyThreads(), d.waitSpinNanos(), d.cpuDevices(), d.kernels(),
				d.kernelLoadWaitThreshold(), d.priorityLimits());
	}

	private static ContextSettings withPriorityLimits(List<Integer> limits) {
		ContextSettings d = DEFAULTS;
		return new ContextSettings(d.backend(), d.device(), d.poolSize(), d.maxSize(), d.acquireTimeout(),
				d.defaultStream(), d.leakDetectionThreshold(), d.drainTimeout(), d.cpuThreads(), d.cpuMemoryBudget(),
				d.memoryPoolReleaseThreshold(), d.compileOptions(), d.kernelCacheDir(), d.kernelTiming(), d.listener(),
				d.utilizationSamplePeriod(), d.utilizationWindow(), d.stagingCacheBytes(), d.copyChunkBytes(),
				d.stagingBudgetBytes(), d.stagingTimeout(), d.copyThreads(), d.waitSpinNanos(), d.cpuDevices(),
				d.kernels(), d.kernelLoadWaitThreshold(), limits);
	}

}