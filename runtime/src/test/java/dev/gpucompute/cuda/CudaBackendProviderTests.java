package dev.gpucompute.cuda;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

import dev.gpucompute.Backend;
import dev.gpucompute.BackendUnavailableException;
import dev.gpucompute.spi.Availability;
import dev.gpucompute.spi.BackendConfig;
import dev.gpucompute.spi.Backends;

/**
 * The provider's probe and open, on whatever machine runs the build. Without a driver (CI, this
 * workstation) the probe must say why in one line, never throw, and open must fail with that reason.
 */
class CudaBackendProviderTests {

	@Test
	void isFoundByTheServiceLoaderAndNamesItsBackend() {
		assertThat(Backends.provider(Backend.CUDA)).isInstanceOf(CudaBackendProvider.class);
		assertThat(new CudaBackendProvider().backend()).isEqualTo(Backend.CUDA);
	}

	@Test
	void probeNeverThrowsAndGivesAOneLineReason() {
		CudaBackendProvider provider = new CudaBackendProvider();
		assertThatCode(() -> provider.probe(0)).doesNotThrowAnyException();
		Availability availability = provider.probe(0);
		assertThat(availability.reason()).isNotBlank().doesNotContain("\n").doesNotContain("\tat ");
		if (!availability.available()) {
			assertThat(availability.reason()).satisfiesAnyOf(
					(reason) -> assertThat(reason).startsWith("CUDA driver library (libcuda.so) could not be loaded: "),
					(reason) -> assertThat(reason).startsWith("no CUDA device"),
					(reason) -> assertThat(reason).startsWith("cuInit failed: "),
					(reason) -> assertThat(reason).contains("NVIDIA driver is older"));
		}
		// The outcome is remembered: probing again gives the same answer, not "Could not initialize class".
		assertThat(provider.probe(0)).isEqualTo(availability);
	}

	@Test
	void withoutADriverTheReasonNamesTheMissingLibrary() {
		String driver = DriverPresence.describe();
		Assumptions.assumeTrue(driver == null, "an NVIDIA driver is installed here: " + driver);
		CudaBackendProvider provider = new CudaBackendProvider();
		Availability availability = provider.probe(0);
		assertThat(availability.available()).isFalse();
		assertThat(availability.broken()).as("no driver is not a broken installation").isFalse();
		assertThat(availability.reason()).startsWith("CUDA driver library (libcuda.so) could not be loaded: libcuda.so.1");
		assertThat(provider.probe(4096)).as("any ordinal, the same reason").isEqualTo(availability);
	}

	@Test
	void anOrdinalOutOfRangeIsUnavailable() {
		CudaBackendProvider provider = new CudaBackendProvider();
		assertThat(provider.probe(4096).available()).isFalse();
		assertThat(provider.probe(-1).available()).isFalse();
	}

	@Test
	void anOrdinalOutOfRangeNamesItselfAndTheDeviceCount() {
		// Where the driver answers (the GPU check runs this class with GPU_REQUIRED=1); without a device the
		// reason is the driver's, above.
		CudaTestSupport.assumeCudaOrFail();
		CudaBackendProvider provider = new CudaBackendProvider();
		int devices = provider.deviceCount();
		assertThat(devices).isPositive();
		assertThat(provider.probe(4096).reason()).isEqualTo("device ordinal 4096 out of range (" + devices + " devices)");
		assertThat(provider.probe(-1).reason()).isEqualTo("device ordinal -1 out of range (" + devices + " devices)");
	}

	@Test
	void openFailsWithTheProbesReasonWhenUnavailable() {
		CudaBackendProvider provider = new CudaBackendProvider();
		Availability availability = provider.probe(4096);
		assertThatThrownBy(() -> provider.open(new BackendConfig(4096, 1, 0, 0, List.of(), null)))
			.isInstanceOf(BackendUnavailableException.class)
			.hasMessageContaining("CUDA backend is unavailable: " + availability.reason())
			.satisfies((ex) -> assertThat(((BackendUnavailableException) ex).backend()).isEqualTo(Backend.CUDA));
	}

}
