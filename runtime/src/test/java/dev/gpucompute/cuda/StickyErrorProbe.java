package dev.gpucompute.cuda;

import static dev.gpucompute.ParamType.BUFFER;
import static dev.gpucompute.ParamType.LONG;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import dev.gpucompute.Dim3;
import dev.gpucompute.GpuException;
import dev.gpucompute.KernelSource;
import dev.gpucompute.LaunchConfig;
import dev.gpucompute.StreamPriority;
import dev.gpucompute.spi.NativeKernel;
import dev.gpucompute.spi.NativeMemory;
import dev.gpucompute.spi.NativeStream;

/**
 * Run in a child JVM by {@link CudaStickyErrorGpuTests}: writes out of bounds on the device, which
 * is a sticky error that poisons the process's primary context, and prints what the backend
 * reported as {@code KEY=value} lines.
 */
public final class StickyErrorProbe {

	private StickyErrorProbe() {
	}

	public static void main(String[] args) {
		KernelSource oob = KernelSource.named("write_out_of_bounds").params(BUFFER, LONG)
			.cudaResource(CudaTestSupport.TEST_KERNELS_PTX);
		CudaDeviceBackend backend;
		try {
			backend = CudaTestSupport.open(null);
		}
		catch (Throwable ex) {
			System.out.println("UNEXPECTED=" + ex);
			System.out.flush();
			System.exit(0);
			return;
		}
		try {
			NativeKernel kernel = backend.loadKernel(oob);
			NativeStream stream = backend.createStream(StreamPriority.NORMAL, "oob-stream");
			NativeMemory buffer = backend.allocate(256, stream);
			stream.synchronize();
			System.out.println("HEALTH_BEFORE=" + backend.healthProblem());
			GpuException failure = null;
			CountDownLatch called = new CountDownLatch(1);
			AtomicReference<GpuException> callbackFailure = new AtomicReference<>();
			try {
				// 2^38 ints past a 256-byte buffer: far outside any mapping.
				backend.launch(kernel, LaunchConfig.of(Dim3.of(1), Dim3.of(1)), CudaTestSupport.args(buffer, 1L << 38), stream);
				stream.whenDone((ex) -> {
					callbackFailure.set(ex);
					called.countDown();
				});
				stream.synchronize();
			}
			catch (GpuException ex) {
				failure = ex;
			}
			if (!called.await(30, TimeUnit.SECONDS)) {
				System.out.println("CALLBACK=not called");
			}
			else {
				GpuException ex = callbackFailure.get();
				System.out.println("CALLBACK=" + ((ex != null) ? ex.getClass().getName() : "null"));
				if (ex != null) {
					System.out.println("CALLBACK_MESSAGE=" + ex.getMessage().replace('\n', ' '));
				}
			}
			if (failure == null) {
				System.out.println("EXCEPTION=none");
			}
			else {
				System.out.println("EXCEPTION=" + failure.getClass().getName());
				System.out.println("MESSAGE=" + failure.getMessage().replace('\n', ' '));
			}
			System.out.println("HEALTH=" + backend.healthProblem());
			try {
				backend.allocate(256, stream);
				System.out.println("AFTER=allocated");
			}
			catch (GpuException ex) {
				System.out.println("AFTER=" + ex.getClass().getName());
				System.out.println("AFTER_MESSAGE=" + ex.getMessage().replace('\n', ' '));
			}
			try {
				backend.free(buffer, stream); // releasing must stay quiet on a lost context
				System.out.println("FREE_AFTER=ok");
			}
			catch (Throwable ex) {
				System.out.println("FREE_AFTER=" + ex);
			}
		}
		catch (Throwable ex) {
			System.out.println("UNEXPECTED=" + ex);
			ex.printStackTrace(System.out);
		}
		finally {
			try {
				backend.close();
				System.out.println("CLOSED=ok");
			}
			catch (Throwable ex) {
				System.out.println("CLOSED=" + ex);
			}
		}
		System.out.flush();
		System.exit(0);
	}

}
