package dev.gpucompute.cuda;

import dev.gpucompute.GpuContext;
import dev.gpucompute.spi.Availability;
import dev.gpucompute.spi.BackendSelection;
import dev.gpucompute.spi.Backends;

/**
 * Run in a child JVM by {@link NativeLoadGpuFreeTests}: probes CUDA with whatever
 * {@code java.io.tmpdir} the test chose, opens an {@code auto} context, and prints what happened as
 * {@code KEY=value} lines.
 */
public final class NativeLoadProbe {

	private NativeLoadProbe() {
	}

	public static void main(String[] args) {
		try {
			Availability availability = new CudaBackendProvider().probe(0);
			System.out.println("AVAILABLE=" + availability.available());
			System.out.println("BROKEN=" + availability.broken());
			System.out.println("REASON=" + availability.reason());
			BackendSelection selection = Backends.select(null, 0);
			System.out.println("AUTO_WARNING=" + selection.warning());
			try (GpuContext context = GpuContext.builder().open()) {
				System.out.println("AUTO_BACKEND=" + context.backend());
				System.out.println("AUTO_REASON=" + context.backendReason());
			}
		}
		catch (Throwable ex) {
			System.out.println("UNEXPECTED=" + ex);
			ex.printStackTrace(System.out);
		}
		System.out.flush();
		System.exit(0);
	}

}
