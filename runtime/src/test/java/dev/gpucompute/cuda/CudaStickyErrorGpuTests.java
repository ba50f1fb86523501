package dev.gpucompute.cuda;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.util.List;
import java.util.Map;

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
class CudaStickyErrorGpuTests {

	@Test
	void anIllegalAddressFailsTheSyncAndMarksTheBackendUnhealthy() throws Exception {
		Map<String, String> report = runProbe();
		assertThat(report.get("HEALTH_BEFORE")).isEqualTo("null");
		assertThat(report.get("EXCEPTION")).isEqualTo(KernelLaunchException.class.getName());
		assertThat(report.get("MESSAGE")).contains("Kernel 'write_out_of_bounds' on stream oob-stream", "CUDA_ERROR_");
		assertThat(report.get("HEALTH")).isNotEqualTo("null")
			.contains("CUDA context is unusable", "write_out_of_bounds", "Restart the process");
		assertThat(report.get("AFTER")).as("later calls fail instead of misbehaving").isNotEqualTo("allocated");
		assertThat(report.get("AFTER_MESSAGE")).as("and say the context is lost").contains("unusable after");
		assertThat(report.get("FREE_AFTER")).as("releasing memory stays quiet").isEqualTo("ok");
		assertThat(report.get("CLOSED")).isEqualTo("ok");
		assertThat(report.get("CALLBACK")).as("whenDone runs also when the work failed, and gets the failure")
			.isEqualTo(KernelLaunchException.class.getName());
		assertThat(report.get("CALLBACK_MESSAGE")).contains("write_out_of_bounds", "oob-stream");
	}

	/**
	 * Runs the probe in a child JVM whose class path comes from the code sources of the classes it
	 * needs ({@link ChildJvm}), not from {@code java.class.path}, so it works however the tests
	 * were launched (Surefire's manifest-only jar, the JUnit console's {@code --class-path}, an IDE).
	 */
	private static Map<String, String> runProbe() throws IOException, InterruptedException {
		ChildJvm.Result result = ChildJvm.run(StickyErrorProbe.class, List.of(), 120);
		Map<String, String> report = result.values();
		assertThat(report).as("probe output:\n%s", result.output()).containsKeys("EXCEPTION", "HEALTH", "CLOSED");
		assertThat(report).as("probe output:\n%s", result.output()).doesNotContainKey("UNEXPECTED");
		return report;
	}

}
