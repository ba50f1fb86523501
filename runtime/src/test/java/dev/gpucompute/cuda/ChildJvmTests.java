package dev.gpucompute.cuda;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;

import org.junit.jupiter.api.Test;

/**
 * The child JVM of {@link CudaStickyErrorGpuTests} finds every class its probe needs without the
 * launcher's {@code java.class.path} (a booter jar under Surefire, only the launcher under the JUnit
 * console, as on the GPU machine). Runs everywhere: without a device the
 * probe gets as far as opening the backend, which needs the runtime, JCuda, its natives, SLF4J and
 * the test kernels.
 */
class ChildJvmTests {

	@Test
	void theStickyErrorProbeRunsWithAClassPathFromCodeSources() throws Exception {
		ChildJvm.Result result = ChildJvm.run(StickyErrorProbe.class, List.of(), 120);
		assertThat(result.output()).doesNotContain("ClassNotFoundException", "NoClassDefFoundError",
				"Could not find or load main class");
		assertThat(result.exitCode()).isZero();
		if (CudaTestSupport.availability().available()) {
			assertThat(result.values()).containsKeys("EXCEPTION", "HEALTH", "CLOSED");
		}
		else {
			assertThat(result.get("UNEXPECTED")).startsWith("dev.gpucompute.BackendUnavailableException");
		}
	}

	@Test
	void theClassPathDoesNotComeFromJavaClassPath() {
		String classPath = ChildJvm.classPath();
		assertThat(classPath.split(java.io.File.pathSeparator)).anyMatch((entry) -> entry.contains("jcuda-natives"))
			.anyMatch((entry) -> entry.endsWith("test-classes") || entry.contains("test"))
			.doesNotHaveDuplicates();
	}

}
