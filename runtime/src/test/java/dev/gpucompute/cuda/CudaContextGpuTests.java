package dev.gpucompute.cuda;

import static dev.gpucompute.ParamType.BUFFER;
import static dev.gpucompute.ParamType.INT;
import static dev.gpucompute.ParamType.LONG;
import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import dev.gpucompute.Backend;
import dev.gpucompute.DeviceBuffer;
import dev.gpucompute.Dim3;
import dev.gpucompute.ElementType;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuEvent;
import dev.gpucompute.GpuLauncher;
import dev.gpucompute.HostArray;
import dev.gpucompute.Kernel;
import dev.gpucompute.KernelSource;
import dev.gpucompute.LaunchConfig;
import dev.gpucompute.StreamLease;
import dev.gpucompute.listener.GpuListener;
import dev.gpucompute.settings.KernelTiming;

/**
 * The public API on a CUDA device: kernel timing in its default (sampled) mode, timing that leaves
 * out cross-stream waits, and many small uploads completing through the event-polling path.
 * Skipped without a device; failed when {@code GPU_REQUIRED=1}.
 */
@Tag("gpu")
@ExtendWith(CudaTestSupport.RequiresCuda.class)
class CudaContextGpuTests {

	private static final KernelSource SLEEP = KernelSource.named("sleep_then_write")
		.params(LONG, BUFFER, INT)
		.cudaResource(CudaTestSupport.TEST_KERNELS_PTX);

	private static final LaunchConfig ONE = LaunchConfig.of(Dim3.of(1), Dim3.of(1));

	/** Collects device times. */
	private static final class Times implements GpuListener {

		final List<Long> nanos = new CopyOnWriteArrayList<>();

		@Override
		public void kernelTimed(String kernel, long nanos) {
			this.nanos.add(nanos);
		}

	}

	private static GpuContext open(KernelTiming timing, Times times) {
		return GpuContext.builder().backend(Backend.CUDA).kernelTiming(timing).listener(times).poolSize(2).open();
	}

	private static void awaitTimes(Times times, int count) throws InterruptedException {
		long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
		while (times.nanos.size() < count && System.nanoTime() < deadline) {
			Thread.sleep(20);
		}
	}

	@Test
	void sampledTimingTheDefaultMeasuresDeviceTimeOfOneLaunchIn64() throws Exception {
		Times times = new Times();
		try (GpuContext defaults = GpuContext.builder().backend(Backend.CUDA).poolSize(0).open()) {
			assertThat(defaults.kernelTiming()).isEqualTo(KernelTiming.SAMPLED);
		}
		try (GpuContext context = open(KernelTiming.SAMPLED, times);
				StreamLease lease = context.streams().acquire();
				DeviceBuffer out = context.launcher().allocate(4, ElementType.BYTE)) {
			GpuLauncher launcher = context.launcher();
			Kernel sleep = launcher.load(SLEEP);
			for (int i = 0; i < 128; i++) {
				launcher.launch(lease.stream(), sleep, ONE, TimeUnit.MILLISECONDS.toNanos(2), out, i);
			}
			lease.stream().synchronize();
			awaitTimes(times, 2);
			assertThat(times.nanos).as("128 launches, one in 64 timed").hasSize(2);
			for (long nanos : times.nanos) {
				assertThat(nanos).isBetween(TimeUnit.MICROSECONDS.toNanos(1900), TimeUnit.MILLISECONDS.toNanos(500));
			}
		}
	}

	/**
	 * The start event of a timed launch comes after the stream's cross-stream wait, so that a launch's time
	 * is its own and not the time it waited for another stream.
	 */
	@Test
	void aTimedLaunchDoesNotIncludeTheCrossStreamWaitBeforeIt() throws Exception {
		Times times = new Times();
		try (GpuContext context = open(KernelTiming.ALL, times);
				StreamLease first = context.streams().acquire();
				StreamLease second = context.streams().acquire();
				DeviceBuffer a = context.launcher().allocate(4, ElementType.BYTE);
				DeviceBuffer b = context.launcher().allocate(4, ElementType.BYTE)) {
			GpuLauncher launcher = context.launcher();
			Kernel sleep = launcher.load(SLEEP);
			first.stream().synchronize();
			second.stream().synchronize();
			launcher.launch(first.stream(), sleep, ONE, TimeUnit.MILLISECONDS.toNanos(300), a, 1);
			try (GpuEvent done = context.events().create()) {
				done.record(first.stream());
				second.stream().waitFor(done);
				launcher.launch(second.stream(), sleep, ONE, TimeUnit.MILLISECONDS.toNanos(5), b, 2);
				second.stream().synchronize();
			}
			awaitTimes(times, 2);
			assertThat(times.nanos).hasSize(2);
			assertThat(times.nanos.get(0)).isGreaterThanOrEqualTo(TimeUnit.MILLISECONDS.toNanos(295));
			assertThat(times.nanos.get(1)).as("the 5 ms kernel, not the 300 ms it waited for")
				.isBetween(TimeUnit.MILLISECONDS.toNanos(4), TimeUnit.MILLISECONDS.toNanos(100));
		}
	}

	@Test
	void tenThousandSmallUploadsAllComplete() {
		try (GpuContext context = GpuContext.builder().backend(Backend.CUDA).poolSize(1).open();
				StreamLease lease = context.streams().acquire();
				DeviceBuffer device = context.launcher().allocate(256, ElementType.BYTE)) {
			int[] data = new int[64];
			@SuppressWarnings("unchecked")
			CompletableFuture<Void>[] futures = new CompletableFuture[10_000];
			for (int i = 0; i < futures.length; i++) {
				data[0] = i;
				futures[i] = device.upload(HostArray.of(data), lease.stream());
			}
			CompletableFuture.allOf(futures).orTimeout(60, TimeUnit.SECONDS).join();
			int[] back = new int[64];
			device.download(HostArray.of(back), lease.stream()).join();
			assertThat(back[0]).isEqualTo(9_999);
		}
	}

}
