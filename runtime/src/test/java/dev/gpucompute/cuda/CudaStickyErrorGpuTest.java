package dev.gpucompute.cuda;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import dev.gpucompute.KernelLaunchException;

/**
 * An out-of-bounds write surfaces as a {@link KernelLaunchException} naming the kernel and the
 * stream, and turns {@code healthProblem()} non-null. Runs {@link StickyErrorProbe} in a child JVM:
 * a sticky error leaves the process's CUDA context unusable, which must not break the other GPU
 * tests in this JVM.
 */
@Tag("gpu")
@ExtendWith(CudaTestSupport.RequiresCuda.class)
class CudaStickyErrorGpuTest {

	@Test
	void anIllegalAddressFailsTheSyncAndMarksTheBackendUnhealthy() throws Exception {
		Map<String, String> report = runProbe();
		assertThat(report.get("HEALTH_BEFORE")).isEqualTo("null");
		assertThat(report.get("EXCEPTION")).isEqualTo(KernelLaunchException.class.getName());
		assertThat(report.get("MESSAGE")).contains("Kernel 'write_out_of_bounds' on stream oob-stream", "CUDA_ERROR_");
		assertThat(report.get("HEALTH")).isNotEqualTo("null")
			.contains("CUDA context is unusable", "write_out_of_bounds", "Restart the process");
		assertThat(report.get("AFTER")).as("later calls fail instead of misbehaving").isNotEqualTo("allocated");
		assertThat(report.get("CLOSED")).isEqualTo("ok");
		assertThat(report.get("CALLBACK")).as("whenDone runs also when the work failed, and gets the failure")
			.isEqualTo(KernelLaunchException.class.getName());
		assertThat(report.get("CALLBACK_MESSAGE")).contains("write_out_of_bounds", "oob-stream");
	}

	private static Map<String, String> runProbe() throws IOException, InterruptedException {
		String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
		// The output goes to a file, so that a hung probe ends in the timeout below, not in a blocked read.
		Path log = Files.createTempFile("sticky-error-probe", ".log");
		try {
			Process process = new ProcessBuilder(List.of(java, "-cp", System.getProperty("java.class.path"),
					StickyErrorProbe.class.getName())).redirectErrorStream(true).redirectOutput(log.toFile()).start();
			if (!process.waitFor(120, TimeUnit.SECONDS)) {
				process.destroyForcibly();
				fail("The probe did not finish within 120 s; its output:\n" + Files.readString(log));
			}
			return parse(Files.readString(log, StandardCharsets.UTF_8));
		}
		finally {
			Files.deleteIfExists(log);
		}
	}

	private static Map<String, String> parse(String text) {
		Map<String, String> report = new HashMap<>();
		for (String line : text.split("\\R")) {
			int eq = line.indexOf('=');
			if (eq > 0 && line.substring(0, eq).matches("[A-Z_]+")) {
				report.putIfAbsent(line.substring(0, eq), line.substring(eq + 1));
			}
		}
		assertThat(report).as("probe output:\n%s", text).containsKeys("EXCEPTION", "HEALTH", "CLOSED");
		assertThat(report).as("probe output:\n%s", text).doesNotContainKey("UNEXPECTED");
		return report;
	}

}
