package dev.gpucompute.autoconfigure.diagnostics;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.diagnostics.FailureAnalysis;
import org.springframework.boot.diagnostics.FailureAnalyzer;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.context.annotation.Configuration;

import dev.gpucompute.Backend;
import dev.gpucompute.KernelSource;
import dev.gpucompute.autoconfigure.DeviceOrdinalOutOfRangeException;
import dev.gpucompute.autoconfigure.GpuAutoConfiguration;
import dev.gpucompute.autoconfigure.QuietOutputExtension;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatException;

/**
 * Start-up failures of {@code gpu.devices} and {@code gpu.cpu.devices}: every bad value fails
 * start-up with a report that names the property, its value, where it was set and what to do, and
 * leaves no device open.
 */
@ExtendWith(QuietOutputExtension.class)
class GpuDevicesFailureAnalysisTests {

	private final ApplicationContextRunner runner = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(GpuAutoConfiguration.class))
		.withPropertyValues("gpu.backend=cpu", "gpu.cpu.threads=1", "gpu.streams.pool-size=1", "gpu.kernels.locations=");

	@ParameterizedTest
	@CsvSource(delimiter = '|', textBlock = """
			gpu.devices=0,1,1        | gpu.devices = 0,1,1      | lists device 1 twice
			gpu.devices=-1           | gpu.devices = -1         | must not contain a negative ordinal, but contains -1
			gpu.devices=all,1        | gpu.devices = all,1      | mixes 'all' with other entries
			gpu.devices=1,all        | gpu.devices = 1,all      | mixes 'all' with other entries
			gpu.devices=first        | gpu.devices = first      | must be 'all' or a list of device ordinals (such as 0,1,2), but contains 'first'
			gpu.devices=0,,1         | gpu.devices = 0,,1       | must not contain an empty entry
			gpu.devices[0]=1         | gpu.devices = 1,1        | lists device 1 twice
			gpu.cpu.devices=0        | gpu.cpu.devices = 0      | must be at least 1
			gpu.cpu.devices=65       | gpu.cpu.devices = 65     | must be at most 64
			""")
	void badValuesAreReportedWithTheValueAndWhy(String property, String shown, String reason) {
		ApplicationContextRunner runner = this.runner.withPropertyValues(property);
		if (property.startsWith("gpu.devices[0]")) {
			runner = runner.withPropertyValues("gpu.devices[1]=1");
		}
		FailureAnalysis analysis = analyze(runner, new InvalidGpuPropertiesFailureAnalyzer());
		assertThat(analysis.getDescription()).startsWith("The GPU configuration has invalid values.")
			.contains(shown)
			.contains(reason);
		assertThat(analysis.getAction()).contains("Correct the gpu.* properties listed above");
		if (property.startsWith("gpu.devices")) {
			assertThat(analysis.getAction()).contains("Set gpu.devices to 'all'");
		}
		else {
			assertThat(analysis.getAction()).contains("gpu.cpu.devices is how many devices the CPU backend stands in for: 1 to 64.");
		}
	}

	@Test
	void emptyGpuDevicesIsReported() {
		FailureAnalysis analysis = analyze(this.runner.withPropertyValues("gpu.devices="),
				new InvalidGpuPropertiesFailureAnalyzer());
		assertThat(analysis.getDescription()).contains("gpu.devices = ").containsPattern("must not (be empty|contain an empty entry)");
	}

	@Test
	void listedOrdinalBeyondTheCpuDevices() {
		this.runner.withPropertyValues("gpu.cpu.devices=3", "gpu.devices=0,4").run((context) -> {
			assertThat(context).hasFailed();
			assertThat(context.getStartupFailure()).rootCause()
				.isInstanceOfSatisfying(DeviceOrdinalOutOfRangeException.class, (ex) -> {
					assertThat(ex.backend()).isEqualTo(Backend.CPU);
					assertThat(ex.property()).isEqualTo("gpu.devices");
					assertThat(ex.ordinal()).isEqualTo(4);
					assertThat(ex.deviceCount()).isEqualTo(3);
				});
			FailureAnalysis analysis = new DeviceOrdinalFailureAnalyzer().analyze(context.getStartupFailure());
			assertThat(analysis.getDescription()).startsWith("gpu.devices lists device 4 (")
				.endsWith("), but the CPU backend on this machine has 3 devices (ordinals 0 to 2).");
			assertThat(analysis.getAction()).contains("list only ordinals from 0 to 2 in gpu.devices")
				.contains("set gpu.devices=all")
				.contains("raise gpu.cpu.devices to at least 5");
			// the generic analyzer leaves it to the specific one
			assertThat(new BackendUnavailableFailureAnalyzer().analyze(context.getStartupFailure())).isNull();
		});
	}

	@Test
	void primaryDeviceBeyondTheCpuDevicesWithAll() {
		FailureAnalysis analysis = analyze(
				this.runner.withPropertyValues("gpu.cpu.devices=2", "gpu.devices=all", "gpu.device=2"),
				new DeviceOrdinalFailureAnalyzer());
		assertThat(analysis.getDescription()).startsWith("gpu.device is 2 (")
			.endsWith("), but the CPU backend on this machine has 2 devices (ordinals 0 to 1).");
		assertThat(analysis.getAction()).contains("set gpu.device to an ordinal from 0 to 1, or raise gpu.cpu.devices");
	}

	@Test
	void singleDeviceBeyondSeveralCpuDevices() {
		FailureAnalysis analysis = analyze(this.runner.withPropertyValues("gpu.cpu.devices=2", "gpu.device=2"),
				new DeviceOrdinalFailureAnalyzer());
		assertThat(analysis.getDescription())
			.isEqualTo("gpu.device is 2, but the CPU backend on this machine has 2 devices (ordinals 0 to 1).");
	}

	@Test
	void primaryDeviceNotAmongTheListedOnes() {
		FailureAnalysis analysis = analyze(
				this.runner.withPropertyValues("gpu.cpu.devices=3", "gpu.devices=0,2", "gpu.device=1"),
				new InvalidGpuPropertiesFailureAnalyzer());
		assertThat(analysis.getDescription()).contains("gpu.device = 1")
			.contains("names the primary device, which must be one of gpu.devices (0,2)")
			.contains("gpu.devices = 0,2");
		assertThat(analysis.getAction()).contains("add it to gpu.devices, or remove gpu.device");
	}

	@Test
	void duplicateSetInAPropertiesFileShowsFileAndLine(CapturedOutput output) {
		assertThatException().isThrownBy(() -> run(config("duplicate-devices.properties")));
		assertThat(output).contains("APPLICATION FAILED TO START")
			.contains("gpu.devices = 0,1,1 (class path resource [failure-analysis/duplicate-devices.properties] - 4:13): "
					+ "lists device 1 twice")
			.contains("Set gpu.devices to 'all'");
	}

	@Test
	void ordinalOutOfRangeInAYamlListShowsTheLineOfTheElement(CapturedOutput output) {
		assertThatException().isThrownBy(() -> run(config("devices-out-of-range.yml")));
		assertThat(output).contains("APPLICATION FAILED TO START")
			.contains("gpu.devices lists device 5 (class path resource [failure-analysis/devices-out-of-range.yml] - 9:7), "
					+ "but the CPU backend on this machine has 2 devices (ordinals 0 to 1).")
			.contains("raise gpu.cpu.devices to at least 6");
		// Checked before any device opens.
		assertThat(output).doesNotContain("Closed GPU context");
	}

	@Test
	void primaryNotListedInAFileShowsWhereBothWereSet(CapturedOutput output) {
		assertThatException().isThrownBy(() -> run(config("device-not-listed.properties")));
		assertThat(output).contains("gpu.device = 1 (class path resource [failure-analysis/device-not-listed.properties] - 4:12)")
			.contains("gpu.devices = 0,2 (class path resource [failure-analysis/device-not-listed.properties] - 5:13)");
	}

	@Test
	void aFailureAfterTheDevicesOpenedClosesEveryDevice(CapturedOutput output) {
		this.runner.withPropertyValues("gpu.cpu.devices=3", "gpu.devices=all")
			.withBean("one", KernelSource.class, () -> KernelSource.named("twice"))
			.withBean("two", KernelSource.class, () -> KernelSource.named("twice"))
			.run((context) -> assertThat(context).hasFailed());
		for (int ordinal = 0; ordinal < 3; ordinal++) {
			assertThat(output).containsPattern("Closed GPU context #\\d+ \\(CPU device " + ordinal + "\\)");
		}
	}

	private static FailureAnalysis analyze(ApplicationContextRunner runner, FailureAnalyzer analyzer) {
		FailureAnalysis[] result = new FailureAnalysis[1];
		runner.run((context) -> {
			assertThat(context).hasFailed();
			result[0] = analyzer.analyze(context.getStartupFailure());
		});
		assertThat(result[0]).as("analysis").isNotNull();
		return result[0];
	}

	private static void run(String... args) {
		SpringApplication application = new SpringApplication(EmptyApplication.class);
		application.setWebApplicationType(WebApplicationType.NONE);
		application.run(args).close();
	}

	private static String config(String file) {
		return "--spring.config.location=classpath:failure-analysis/" + file;
	}

	@Configuration(proxyBeanMethods = false)
	@EnableAutoConfiguration
	static class EmptyApplication {

	}

}
