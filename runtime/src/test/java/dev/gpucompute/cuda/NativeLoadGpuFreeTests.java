package dev.gpucompute.cuda;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import dev.gpucompute.spi.Availability;

/**
 * How a broken CUDA installation is reported, for real, in child JVMs whose
 * {@code java.io.tmpdir} (where JCuda extracts its JNI library) is made unusable or holds a
 * damaged copy. Runs on any machine, with or without a GPU.
 */
class NativeLoadGpuFreeTests {

	@Test
	void aTruncatedExtractedLibraryIsReplacedInsteadOfCrashingTheJvm(@TempDir Path tempDir) throws Exception {
		String file = libraryFileOrSkip();
		byte[] real;
		try (InputStream in = getClass().getClassLoader().getResourceAsStream("lib/" + file)) {
			real = in.readAllBytes();
		}
		// What an interrupted extraction leaves behind: the first 5000 bytes. Loaded as it is, the
		// dynamic loader dies with SIGBUS and the JVM with it.
		Files.write(tempDir.resolve(file), java.util.Arrays.copyOf(real, 5000));
		ChildJvm.Result result = ChildJvm.run(NativeLoadProbe.class, List.of("-Djava.io.tmpdir=" + tempDir), 120);
		assertThat(result.exitCode()).as("the child JVM ended normally:\n%s", result.output()).isZero();
		assertThat(result.values()).doesNotContainKey("UNEXPECTED");
		// Once replaced, the library loads: CUDA's answer is this JVM's, whose copy was never damaged.
		Availability here = new CudaBackendProvider().probe(0);
		assertThat(result.get("BROKEN")).as("the replaced library is not a broken installation").isEqualTo("false");
		assertThat(result.get("AVAILABLE")).isEqualTo(String.valueOf(here.available()));
		assertThat(result.get("REASON")).isEqualTo(here.reason());
		assertThat(result.get("AUTO_BACKEND")).isEqualTo(here.available() ? "CUDA" : "CPU");
		assertThat(Files.readAllBytes(tempDir.resolve(file))).as("the library was extracted again, whole").isEqualTo(real);
		assertThat(result.output()).contains("Replaced " + tempDir.resolve(file));
	}

	@Test
	void anUnusableTempDirIsNamedAndAutoWarns() throws Exception {
		libraryFileOrSkip();
		// Nothing can create a directory under /proc, root included.
		Path unusable = Path.of("/proc/gpu-compute-no-such-dir/tmp");
		ChildJvm.Result result = ChildJvm.run(NativeLoadProbe.class, List.of("-Djava.io.tmpdir=" + unusable), 120);
		assertThat(result.exitCode()).isZero();
		assertThat(result.get("AVAILABLE")).isEqualTo("false");
		assertThat(result.get("BROKEN")).isEqualTo("true");
		assertThat(result.get("REASON")).contains("could not extract its native library to " + unusable)
			.contains("-Djava.io.tmpdir");
		assertThat(result.get("AUTO_WARNING")).isEqualTo("true");
		assertThat(result.get("AUTO_BACKEND")).isEqualTo("CPU");
		assertThat(result.get("AUTO_REASON")).startsWith("auto: falling back to CPU although CUDA is installed here")
			.contains(unusable.toString());
		assertThat(result.output()).as("logged at WARN").containsPattern("WARN [^\\n]*GpuContext - GPU backend CPU");
	}

	@Test
	void withoutDriverTheReasonNamesLibcudaAndAutoDoesNotWarn(@TempDir Path tempDir) throws Exception {
		libraryFileOrSkip();
		Assumptions.assumeTrue(DriverPresence.describe() == null, "an NVIDIA driver is installed here");
		ChildJvm.Result result = ChildJvm.run(NativeLoadProbe.class, List.of("-Djava.io.tmpdir=" + tempDir), 120);
		assertThat(result.get("AVAILABLE")).isEqualTo("false");
		assertThat(result.get("BROKEN")).isEqualTo("false");
		assertThat(result.get("REASON")).startsWith("CUDA driver library (libcuda.so) could not be loaded: libcuda.so.1");
		assertThat(result.get("AUTO_WARNING")).isEqualTo("false");
		assertThat(result.output()).doesNotContainPattern("WARN [^\\n]*GpuContext");
	}

	private String libraryFileOrSkip() {
		String file = ExtractedLibraries.fileName(getClass().getClassLoader(), "JCudaDriver");
		Assumptions.assumeTrue(file != null && getClass().getClassLoader().getResource("lib/" + file) != null,
				"JCuda's natives for this platform are not on the class path");
		return file;
	}

}
