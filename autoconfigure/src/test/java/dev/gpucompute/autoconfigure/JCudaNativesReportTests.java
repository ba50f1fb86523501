package dev.gpucompute.autoconfigure;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;

import dev.gpucompute.Backend;
import dev.gpucompute.GpuContext;
import dev.gpucompute.spi.Backends;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assumptions.assumeThat;

/**
 * The starter leaves JCuda's platform natives to the application and says which to add when they
 * are missing; it asks the CUDA backend's provider ({@code BackendProvider.missingDependency}), not
 * the backend's own classes. JCuda publishes no natives for linux-aarch64, so pretending to run there
 * makes the x86-64 natives of this class path not count. (The failure report's side of it:
 * {@code GpuFailureAnalyzersTests}.)
 */
@ExtendWith(OutputCaptureExtension.class)
class JCudaNativesReportTests {

	private final String osName = System.getProperty("os.name");

	private final String osArch = System.getProperty("os.arch");

	private final ApplicationContextRunner runner = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(GpuAutoConfiguration.class));

	@AfterEach
	void restorePlatform() {
		System.setProperty("os.name", this.osName);
		System.setProperty("os.arch", this.osArch);
	}

	@Test
	void autoOnTheCpuSaysWhichNativesWouldEnableCuda(CapturedOutput output) {
		// Probed before the platform changes, so that the driver state the JVM keeps is this machine's.
		assumeThat(Backends.provider(Backend.CUDA).probe(0).available()).as("a CUDA device is present").isFalse();
		System.setProperty("os.name", "Linux");
		System.setProperty("os.arch", "aarch64");
		this.runner.withPropertyValues("gpu.backend=auto").run((context) -> {
			assertThat(context.getBean(GpuContext.class).backend()).isEqualTo(Backend.CPU);
			assertThat(output).contains("JCuda's native libraries for linux-aarch64 are not on the class path")
				.contains("until then gpu.backend=auto uses the CPU backend");
		});
	}

	@Test
	void withTheNativesPresentNothingIsSaid(CapturedOutput output) {
		assumeThat(Backends.provider(Backend.CUDA).probe(0).available()).as("a CUDA device is present").isFalse();
		System.setProperty("os.name", "Linux");
		System.setProperty("os.arch", "amd64");
		this.runner.withPropertyValues("gpu.backend=auto")
			.run((context) -> assertThat(output).doesNotContain("JCuda's native libraries"));
	}

}
