package dev.gpucompute.settings;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import java.time.Duration;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;

import dev.gpucompute.Backend;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuContextBuilder;
import dev.gpucompute.StreamPriority;

/**
 * The settings records hold each setting's default, limits and check once: the builder's setters map
 * onto them (the same value, refused with the same message, whichever way it is set), the rules
 * between two settings hold however the settings were made, and a refusal names the setting, what is
 * wrong and the limit, for the starter to report the property.
 */
class SettingsTests {

	@Test
	void theBuilderStartsFromEachRecordsDefaults() {
		GpuContextBuilder.Settings settings = GpuContext.builder().settings();
		assertThat(settings.streams()).isEqualTo(StreamSettings.DEFAULTS);
		assertThat(settings.copies()).isEqualTo(CopySettings.DEFAULTS);
		assertThat(settings.cpu()).isEqualTo(CpuSettings.DEFAULTS);
		assertThat(settings.cuda()).isEqualTo(CudaSettings.DEFAULTS);
		assertThat(settings.kernelSettings()).isEqualTo(KernelSettings.DEFAULTS);
		assertThat(settings.shutdown()).isEqualTo(ShutdownSettings.DEFAULTS);
		assertThat(settings.metrics()).isEqualTo(MetricsSettings.DEFAULTS);
		assertThat(settings.priorityLimits()).isEmpty();
		for (StreamPriority priority : StreamPriority.values()) {
			assertThat(settings.priorityLimit(priority)).isEqualTo(StreamSettings.DEFAULT_MAX_SIZE);
		}
	}

	@Test
	void aSetterAndItsRecordRefuseTheSameValueAlike() {
		assertSameRefusal(() -> GpuContext.builder().maxSize(0), () -> StreamSettings.DEFAULTS.withMaxSize(0));
		assertSameRefusal(() -> GpuContext.builder().acquireTimeout(Duration.ofSeconds(-1)),
				() -> StreamSettings.DEFAULTS.withAcquireTimeout(Duration.ofSeconds(-1)));
		assertSameRefusal(() -> GpuContext.builder().copyChunkSize(4098), () -> CopySettings.DEFAULTS.withChunkSize(4098));
		assertSameRefusal(() -> GpuContext.builder().cpuThreads(0), () -> CpuSettings.DEFAULTS.withThreads(0));
		assertSameRefusal(() -> GpuContext.builder().drainTimeout(Duration.ofMillis(-1)),
				() -> new ShutdownSettings(Duration.ofMillis(-1)));
		assertSameRefusal(() -> GpuContext.builder().memoryPoolReleaseThreshold(-1), () -> new CudaSettings(-1));
	}

	@Test
	void aRefusalNamesTheSettingTheProblemAndTheLimit() {
		InvalidSettingException small = catchThrowableOfType(() -> StreamSettings.DEFAULTS.withMaxSize(0),
				InvalidSettingException.class);
		assertThat(small.setting()).isEqualTo("maxSize");
		assertThat(small.problem()).isEqualTo(InvalidSettingException.Problem.TOO_SMALL);
		assertThat(small.limit()).isEqualTo(1);
		assertThat(small).hasMessage("maxSize must be between 1 and 1024, got 0");
		InvalidSettingException large = catchThrowableOfType(() -> CpuSettings.DEFAULTS.withDevices(65),
				InvalidSettingException.class);
		assertThat(large.problem()).isEqualTo(InvalidSettingException.Problem.TOO_LARGE);
		assertThat(large.limit()).isEqualTo(CpuSettings.MAX_DEVICES);
		InvalidSettingException negative = catchThrowableOfType(
				() -> CopySettings.DEFAULTS.withStagingTimeout(Duration.ofSeconds(-1)), InvalidSettingException.class);
		assertThat(negative.setting()).isEqualTo("stagingTimeout");
		assertThat(negative.problem()).isEqualTo(InvalidSettingException.Problem.NEGATIVE);
		assertThatThrownBy(() -> Limits.nanos(Duration.ofSeconds(Long.MAX_VALUE), "timeout"))
			.isInstanceOf(InvalidSettingException.class)
			.hasMessageContaining("timeout must be at most " + Limits.MAX_DURATION + " (about 292 years)");
		assertThatThrownBy(() -> Limits.nanos(null, "timeout")).isInstanceOf(NullPointerException.class)
			.hasMessage("timeout");
	}

	@Test
	void aCopyChunkThatIsNotWholeBlocksIsRefused() {
		// The copy pipeline moves whole elements per chunk: 4098 bytes would split a long across two.
		for (long chunk : new long[] { 4098, 0, CopySettings.MAX_CHUNK + CopySettings.MIN_CHUNK }) {
			assertThatThrownBy(() -> CopySettings.DEFAULTS.withChunkSize(chunk)).isInstanceOf(InvalidSettingException.class)
				.hasMessage("copyChunkSize must be a multiple of 4096 between 4096 and 1073741824, got " + chunk);
		}
		assertThat(CopySettings.DEFAULTS.withChunkSize(8192).chunkSize()).isEqualTo(8192);
	}

	@Test
	void theRulesBetweenTwoSettingsHoldInAnyOrderOfSetting() {
		// Set one at a time, in either order, the pair is checked once complete.
		assertThat(GpuContext.builder().poolSize(64).maxSize(64).settings().streams().initialSize()).isEqualTo(64);
		assertThat(GpuContext.builder().maxSize(64).poolSize(64).settings().streams().initialSize()).isEqualTo(64);
		InvalidSettingException exceeds = catchThrowableOfType(() -> GpuContext.builder().poolSize(10).maxSize(4).settings(),
				InvalidSettingException.class);
		assertThat(exceeds).hasMessage("poolSize (10) must not exceed maxSize (4)");
		assertThat(exceeds.problem()).isEqualTo(InvalidSettingException.Problem.EXCEEDS);
		assertThat(exceeds.limit()).isEqualTo(4L);
		// The same rule for a record made without the builder.
		assertThatThrownBy(() -> new StreamSettings(10, 4, Duration.ZERO, DefaultStreamMode.LEGACY, Duration.ZERO).checked())
			.hasMessage("poolSize (10) must not exceed maxSize (4)");
		assertThatThrownBy(() -> GpuContext.builder().stagingBudget(8192).copyChunkSize(16384).settings())
			.isInstanceOf(InvalidSettingException.class)
			.hasMessageContaining("stagingBudget (8192 bytes) must hold at least one copy chunk");
		assertThatThrownBy(() -> GpuContext.builder().maxSize(4).priorityLimit(StreamPriority.NORMAL, 5).settings())
			.isInstanceOf(InvalidSettingException.class)
			.hasMessage("priorityLimit(NORMAL) (5) must not exceed maxSize (4)");
	}

	@Test
	void anUnsetPoolSizeFollowsAMaximumBelowTheDefault() {
		assertThat(StreamSettings.DEFAULTS.initialSize()).isEqualTo(StreamSettings.DEFAULT_POOL_SIZE);
		assertThat(GpuContext.builder().maxSize(3).settings().streams().initialSize()).isEqualTo(3);
		try (GpuContext context = GpuContext.builder().backend(Backend.CPU).maxSize(3).open()) {
			assertThat(context.streams().stats().minSize()).isEqualTo(3);
			assertThat(context.streams().stats().size()).isEqualTo(3);
		}
	}

	@Test
	void settingsMadeWithoutTheBuilderAreCheckedToo() {
		GpuContextBuilder.Settings d = GpuContext.builder().settings();
		assertThatThrownBy(() -> new GpuContextBuilder.Settings(d.backend(), null, d.kernels(), d.priorityLimits(),
				d.streams(), d.copies(), d.cpu(), d.cuda(), d.kernelSettings(), d.shutdown(), d.metrics()))
			.isInstanceOf(NullPointerException.class)
			.hasMessage("listener");
		assertThatThrownBy(() -> new GpuContextBuilder.Settings(d.backend(), d.listener(), d.kernels(),
				Map.of(StreamPriority.HIGH, 0), d.streams(), d.copies(), d.cpu(), d.cuda(), d.kernelSettings(),
				d.shutdown(), d.metrics()))
			.isInstanceOf(InvalidSettingException.class)
			.hasMessageContaining("priorityLimit(HIGH) must be between 1 and");
		assertThatThrownBy(() -> new KernelSettings(java.util.Arrays.asList("-O3", null), null, Duration.ZERO))
			.isInstanceOf(NullPointerException.class)
			.hasMessage("compileOptions[1] is null");
		assertThat(new KernelSettings(List.of("-O3"), null, Duration.ZERO).compileOptions()).containsExactly("-O3");
	}

	private static void assertSameRefusal(Runnable setter, Runnable record) {
		Throwable bySetter = org.assertj.core.api.Assertions.catchThrowable(setter::run);
		Throwable byRecord = org.assertj.core.api.Assertions.catchThrowable(record::run);
		assertThat(bySetter).isInstanceOf(InvalidSettingException.class);
		assertThat(byRecord).hasSameClassAs(bySetter).hasMessage(bySetter.getMessage());
	}

}
