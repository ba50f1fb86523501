package dev.gpucompute.cuda;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;

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
class CudaBackendProviderTest {

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
		Availability availability = new CudaBackendProvider().probe(0);
		if (availability.reason().startsWith("CUDA driver library")) {
			assertThat(availability.available()).isFalse();
			assertThat(availability.reason()).contains("libcuda.so");
		}
	}

	@Test
	void anOrdinalOutOfRangeIsUnavailableWithAReason() {
		Availability availability = new CudaBackendProvider().probe(4096);
		assertThat(availability.available()).isFalse();
		if (CudaDriver.init().ok()) {
			assertThat(availability.reason()).matches("device ordinal 4096 out of range \\(\\d+ devices\\)|no CUDA device");
		}
		assertThat(new CudaBackendProvider().probe(-1).available()).isFalse();
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
