package dev.gpucompute.benchmarks;

import dev.gpucompute.Backend;
import dev.gpucompute.GpuContext;
import dev.gpucompute.spi.BackendSelection;
import dev.gpucompute.spi.Backends;

/**
 * Says whether the CUDA variants can run here: exit status 0 and the device when a CUDA device is
 * usable, 1 and the reason when not. {@code benchmarks/run.sh} uses it to choose the backends.
 */
public final class Probe {

	private Probe() {
	}

	public static void main(String[] args) {
		BackendSelection selection = Backends.select(Backend.CUDA, 0);
		boolean usable = selection.provider() != null && selection.availability().available();
		System.out.println((usable ? "CUDA available: " : "CUDA unavailable: ") + selection.availability().reason());
		System.exit(usable ? 0 : 1);
	}

}
