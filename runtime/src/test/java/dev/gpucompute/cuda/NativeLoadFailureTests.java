package dev.gpucompute.cuda;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The classification of native-load failures on the messages JCuda 12.6 and
 * glibc really produce (captured on this build machine: a noexec tmpfs, a file of text, a missing
 * libcuda).
 */
class NativeLoadFailureTests {

	private static final Path TMP = Path.of("/tmp/x");

	private static UnsatisfiedLinkError jcuda(String resourceAttempt) {
		return new UnsatisfiedLinkError("Error while loading native library \"JCudaDriver-12.6.0-linux-x86_64\"\n"
				+ "Operating system name: Linux\nArchitecture         : amd64\nArchitecture bit size: 64\n"
				+ "---(start of nested stack traces)---\nStack trace from the attempt to load the library as a file:\n"
				+ "java.lang.UnsatisfiedLinkError: no JCudaDriver-12.6.0-linux-x86_64 in java.library.path: /usr/lib\n"
				+ "\tat java.base/java.lang.ClassLoader.loadLibrary(ClassLoader.java:2458)\n"
				+ "Stack trace from the attempt to load the library as a resource:\n" + resourceAttempt + "\n"
				+ "\tat java.base/jdk.internal.loader.NativeLibraries.load(Native Method)\n---(end of nested stack traces)---\n");
	}

	@Test
	void aNoexecTempDirIsNamed() {
		NativeLoadFailure.Diagnosis diagnosis = NativeLoadFailure.classify(jcuda("java.lang.UnsatisfiedLinkError: "
				+ "/tmp/x/libJCudaDriver-12.6.0-linux-x86_64.so: /tmp/x/libJCudaDriver-12.6.0-linux-x86_64.so: failed to map "
				+ "segment from shared object"), TMP);
		assertThat(diagnosis.kind()).isEqualTo(NativeLoadFailure.Kind.NOEXEC_TEMP_DIR);
		assertThat(diagnosis.kind().broken()).isTrue();
		assertThat(diagnosis.reason()).contains("/tmp/x/libJCudaDriver-12.6.0-linux-x86_64.so", "noexec", "-Djava.io.tmpdir")
			.doesNotContain("\n");
	}

	@Test
	void aDamagedLibraryIsNamed() {
		NativeLoadFailure.Diagnosis diagnosis = NativeLoadFailure.classify(jcuda("java.lang.UnsatisfiedLinkError: "
				+ "/tmp/x/libJCudaDriver-12.6.0-linux-x86_64.so: /tmp/x/libJCudaDriver-12.6.0-linux-x86_64.so: invalid ELF header"),
				TMP);
		assertThat(diagnosis.kind()).isEqualTo(NativeLoadFailure.Kind.DAMAGED_LIBRARY);
		assertThat(diagnosis.reason()).contains("/tmp/x/libJCudaDriver-12.6.0-linux-x86_64.so is damaged (invalid ELF header)",
				"delete it");
		assertThat(NativeLoadFailure.classify(jcuda("java.lang.UnsatisfiedLinkError: /tmp/x/libA.so: /tmp/x/libA.so: file too short"),
				TMP).kind()).isEqualTo(NativeLoadFailure.Kind.DAMAGED_LIBRARY);
	}

	@Test
	void aMissingDriverIsPlainAbsence() {
		NativeLoadFailure.Diagnosis diagnosis = NativeLoadFailure.classify(jcuda("java.lang.UnsatisfiedLinkError: "
				+ "/tmp/x/libJCudaDriver-12.6.0-linux-x86_64.so: libcuda.so.1: cannot open shared object file: No such file or directory"),
				TMP);
		assertThat(diagnosis.kind()).isEqualTo(NativeLoadFailure.Kind.DRIVER_MISSING);
		assertThat(diagnosis.kind().broken()).isFalse();
		assertThat(diagnosis.reason()).isEqualTo("CUDA driver library (libcuda.so) could not be loaded: libcuda.so.1: cannot "
				+ "open shared object file: No such file or directory");
	}

	@Test
	void anUnwritableTempDirAnOldDriverAndMissingClassesAreTold() {
		assertThat(NativeLoadFailure.classify(jcuda("java.io.IOException: Could not create directory for temporary file: /tmp/x"),
				TMP).kind()).isEqualTo(NativeLoadFailure.Kind.TEMP_DIR_UNUSABLE);
		NativeLoadFailure.Diagnosis old = NativeLoadFailure.classify(jcuda("java.lang.UnsatisfiedLinkError: /tmp/x/libJ.so: "
				+ "/tmp/x/libJ.so: undefined symbol: cuMemAllocAsync"), TMP);
		assertThat(old.kind()).isEqualTo(NativeLoadFailure.Kind.DRIVER_TOO_OLD);
		assertThat(old.reason()).contains("cuMemAllocAsync", "update the driver");
		NativeLoadFailure.Diagnosis missing = NativeLoadFailure.classify(new NoClassDefFoundError("jcuda/driver/JCudaDriver"), TMP);
		assertThat(missing.kind()).isEqualTo(NativeLoadFailure.Kind.JCUDA_MISSING);
		assertThat(missing.reason()).contains("not on the class path");
	}

	@Test
	void driverPresenceLooksAtProcDevAndTheLibraryDirectories(@TempDir Path root) throws Exception {
		assertThat(DriverPresence.describe(root, null)).isNull();
		Files.createDirectories(root.resolve("opt/driver/lib"));
		Files.writeString(root.resolve("opt/driver/lib/libcuda.so.1"), "");
		assertThat(DriverPresence.describe(root, null)).as("not on a searched path").isNull();
		assertThat(DriverPresence.describe(root, "/opt/driver/lib:relative")).isEqualTo("libcuda.so.1 is in /opt/driver/lib");
		Files.createDirectories(root.resolve("proc/driver/nvidia"));
		Files.createDirectories(root.resolve("dev"));
		Files.writeString(root.resolve("dev/nvidiactl"), "");
		assertThat(DriverPresence.describe(root, null)).isEqualTo("/proc/driver/nvidia exists, /dev/nvidiactl exists");
	}

}
