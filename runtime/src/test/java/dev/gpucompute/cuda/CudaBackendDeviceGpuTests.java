package dev.gpucompute.cuda;

import static dev.gpucompute.cuda.CudaTestSupport.args;
import static org.assertj.core.api.Assertions.assertThat;

import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import dev.gpucompute.Backend;
import dev.gpucompute.ContextClosedException;
import dev.gpucompute.DeviceInfo;
import dev.gpucompute.GpuException;
import dev.gpucompute.LaunchConfig;
import dev.gpucompute.StreamPriority;
import dev.gpucompute.settings.DefaultStreamMode;
import dev.gpucompute.spi.NativeKernel;
import dev.gpucompute.spi.NativeMemory;
import dev.gpucompute.spi.NativeStream;

/**
 * The CUDA backend as a whole against a real device: what it reports about the device, and calls
 * from many threads at once, while it closes and from virtual threads. Skipped with the probe's
 * reason without a device; failed instead when {@code GPU_REQUIRED=1}.
 */
@Tag("gpu")
@ExtendWith(CudaTestSupport.RequiresCuda.class)
class CudaBackendDeviceGpuTests extends CudaBackendGpuFixture {

	@Test
	void deviceInfoIsFilledIn() {
		DeviceInfo info = backend.info();
		assertThat(info.backend()).isEqualTo(Backend.CUDA);
		assertThat(info.name()).isNotBlank();
		assertThat(info.uuid()).matches("GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}");
		assertThat(info.pciBusId()).matches("[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\\.[0-9A-Fa-f]");
		assertThat(info.computeCapability()).matches("\\d+\\.\\d+");
		assertThat(info.driverVersion()).matches("\\d+\\.\\d");
		assertThat(info.multiprocessors()).isPositive();
		assertThat(info.totalMemoryBytes()).isGreaterThan(1L << 30);
		assertThat(info.maxThreadsPerBlock()).isGreaterThanOrEqualTo(1024);
		assertThat(info.maxBlockDim().x()).isGreaterThanOrEqualTo(1024);
		assertThat(info.maxGridDim().x()).isEqualTo(Integer.MAX_VALUE);
		assertThat(info.maxSharedMemoryPerBlock()).isGreaterThanOrEqualTo(48 * 1024);
		assertThat(info.warpSize()).isEqualTo(32);
		assertThat(CudaTestSupport.availability().reason()).contains(info.name());
	}

	/**
	 * Threads launching with arguments (each launch holds a block of page-locked host memory for its
	 * driver call) while another thread closes the backend: close waits for the calls in the driver
	 * and frees no block under one, so the JVM survives, every launcher ends with a success or a
	 * closed-context error, and no host memory is left once they have stopped.
	 */
	@Test
	void closingWhileOtherThreadsLaunchFreesNoHostMemoryUnderALaunch() throws Exception {
		CudaDeviceBackend closing = CudaTestSupport.open(null);
		NativeKernel saxpy = closing.loadKernel(SAXPY_PTX);
		NativeStream setup = closing.createStream(StreamPriority.NORMAL, "setup");
		NativeMemory x = closing.allocate(4096, setup);
		NativeMemory y = closing.allocate(4096, setup);
		setup.synchronize();
		AtomicInteger launches = new AtomicInteger();
		ConcurrentLinkedQueue<Throwable> unexpected = new ConcurrentLinkedQueue<>();
		List<Thread> threads = new ArrayList<>();
		for (int t = 0; t < 8; t++) {
			Thread thread = new Thread(() -> {
				try {
					NativeStream own = closing.defaultStream(DefaultStreamMode.PER_THREAD);
					for (;;) {
						// n = 0: the kernel reads nothing, so buffers freed at close are never touched.
						closing.launch(saxpy, LaunchConfig.linear(1024, 256), args(0, 2f, x, y), own);
						launches.incrementAndGet();
					}
				}
				catch (ContextClosedException ex) {
					// the expected end
				}
				catch (Throwable ex) {
					unexpected.add(ex);
				}
			}, "launcher-" + t);
			threads.add(thread);
			thread.start();
		}
		long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
		while (launches.get() < 10_000 && System.nanoTime() < deadline) {
			Thread.sleep(1);
		}
		closing.close();
		for (Thread thread : threads) {
			thread.join(TimeUnit.SECONDS.toMillis(30));
			assertThat(thread.isAlive()).as("%s stopped", thread.getName()).isFalse();
		}
		// A launch that raced the close may fail in the driver (its stream or module went) with a GpuException.
		assertThat(unexpected).allSatisfy((ex) -> assertThat(ex).isInstanceOf(GpuException.class));
		assertThat(launches.get()).isPositive();
		assertThat(closing.hostScratchStats()).as("host blocks after close").contains("chunks=0", "lent=0");
	}

	/**
	 * Virtual threads (Java 21+) allocating, launching with arguments and freeing at once: the
	 * allocator's and the host blocks' locks sit between a call's entry and its driver call, and a
	 * virtual thread that waits for one may resume on a carrier where the context is not current; each
	 * driver call after such a wait makes it current again. Aborted (skipped) before Java 21.
	 */
	@Test
	void virtualThreadsThatWaitForTheBackendsLocksStillCallTheDriverInItsContext() throws Exception {
		Method factory;
		try {
			factory = Executors.class.getMethod("newVirtualThreadPerTaskExecutor");
		}
		catch (NoSuchMethodException ex) {
			Assumptions.abort("no virtual threads before Java 21 (this is Java "
					+ Runtime.version().feature() + ")");
			return;
		}
		NativeKernel saxpy = backend.loadKernel(SAXPY_PTX);
		List<Future<?>> done = new ArrayList<>();
		ExecutorService virtual = (ExecutorService) factory.invoke(null);
		try {
			for (int t = 0; t < 256; t++) {
				done.add(virtual.submit(() -> {
					for (int i = 0; i < 50; i++) {
						NativeMemory x = backend.allocate(4096 + 512L * (i % 8), this.stream);
						NativeMemory y = backend.allocate(4096, this.stream);
						backend.launch(saxpy, LaunchConfig.linear(1024, 256), args(1024, 2f, x, y), this.stream);
						backend.free(x, this.stream);
						backend.free(y, this.stream);
					}
					return null;
				}));
			}
			for (Future<?> future : done) {
				future.get(60, TimeUnit.SECONDS); // a call on a carrier without the context fails with CUDA_ERROR_INVALID_CONTEXT
			}
		}
		finally {
			virtual.shutdown();
		}
		this.stream.synchronize();
		assertThat(backend.healthProblem()).isNull();
	}

}
