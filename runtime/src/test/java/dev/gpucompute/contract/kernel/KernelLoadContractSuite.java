package dev.gpucompute.contract.kernel;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.tuple;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

import org.junit.jupiter.api.Test;

import dev.gpucompute.DeviceBuffer;
import dev.gpucompute.Dim3;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuContextBuilder;
import dev.gpucompute.GpuException;
import dev.gpucompute.GpuLauncher;
import dev.gpucompute.HostArray;
import dev.gpucompute.Kernel;
import dev.gpucompute.KernelSource;
import dev.gpucompute.LaunchConfig;
import dev.gpucompute.ParamType;
import dev.gpucompute.StreamLease;
import dev.gpucompute.contract.ContractKernels;
import dev.gpucompute.contract.RuntimeThreads;
import dev.gpucompute.listener.GpuListener;
import dev.gpucompute.listener.KernelLoad;
import dev.gpucompute.listener.KernelLoad.Trigger;
import dev.gpucompute.settings.KernelTiming;

/**
 * Which calls load a kernel, and what a load reports: on CUDA a module load waits for the
 * work in flight on the device, so loads must be visible and avoidable. Written once, run on the CPU
 * backend on every build and on CUDA where a device exists:
 * <ul>
 * <li>only {@link GpuContextBuilder#kernels} (at open), {@link GpuLauncher#load} and the first
 * {@link GpuLauncher#launch(KernelSource, LaunchConfig, Object...)} of a kernel not loaded yet
 * load, each once, and every load reaches the listener once with what triggered it;</li>
 * <li>a load that begins while the context has work in flight says so, and counts as having waited
 * once its load step reaches the threshold (zero here, so on every backend).</li>
 * </ul>
 */
abstract class KernelLoadContractSuite {

	private static final LaunchConfig ONE = LaunchConfig.of(Dim3.of(1), Dim3.of(1));

	/** A builder for the backend under test. */
	protected abstract GpuContextBuilder builder();

	/** Records every load the context reports. */
	static final class Loads implements GpuListener {

		final List<KernelLoad> loads = Collections.synchronizedList(new ArrayList<>());

		@Override
		public void kernelLoaded(KernelLoad load) {
			this.loads.add(load);
		}

		List<KernelLoad> take() {
			synchronized (this.loads) {
				List<KernelLoad> taken = List.copyOf(this.loads);
				this.loads.clear();
				return taken;
			}
		}

	}

	@Test
	void onlyOpenLoadAndTheFirstLaunchOfASourceLoadAKernel() {
		Loads listener = new Loads();
		try (GpuContext context = builder().kernelTiming(KernelTiming.OFF).listener(listener)
			.kernels(ContractKernels.SAXPY, ContractKernels.COPY_CELL)
			.open()) {
			List<KernelLoad> atOpen = listener.take();
			assertThat(atOpen).extracting(KernelLoad::kernel, KernelLoad::trigger)
				.containsExactly(tuple("saxpy", Trigger.OPEN), tuple("copy_cell", Trigger.OPEN));
			assertThat(atOpen).allSatisfy((load) -> {
				assertThat(load.workInFlight()).as("nothing runs while the context opens").isFalse();
				assertThat(load.waited()).isFalse();
				assertThat(load.time()).isGreaterThanOrEqualTo(load.deviceTime());
			});
			GpuLauncher launcher = context.launcher();
			Kernel saxpy = launcher.kernel("saxpy");
			try (StreamLease lease = context.streams().acquire(); DeviceBuffer x = launcher.upload(HostArray.of(new float[] { 1, 2 }));
					DeviceBuffer cells = launcher.upload(HostArray.of(new int[4]))) {
				// Every way of launching a loaded kernel, its source included, and a group: no load. The
				// default stream waits for the lease's work on the same buffers, so no two launches race.
				launcher.launch(saxpy, ONE, 2, 1f, x, x);
				launcher.launch(lease.stream(), saxpy, ONE, 2, 1f, x, x);
				launcher.currentStream().waitFor(lease.stream());
				launcher.launch(ContractKernels.SAXPY, ONE, 2, 1f, x, x);
				launcher.withStream(lease.stream(), () -> launcher.launch(ContractKernels.COPY_CELL, ONE, cells, 0, cells, 1, 1));
				launcher.currentStream().waitFor(lease.stream());
				launcher.parallel(() -> launcher.launch(saxpy, ONE, 2, 1f, x, x));
				assertThat(listener.take()).as("loads by launches of loaded kernels").isEmpty();
				// The first launch of a source not loaded yet loads it, once; GpuLauncher.load loads once.
				launcher.launch(ContractKernels.APPEND, ONE, cells, 7);
				launcher.launch(ContractKernels.APPEND, ONE, cells, 8);
				launcher.load(ContractKernels.SUM_CELLS);
				launcher.load(ContractKernels.SUM_CELLS);
				launcher.launch(ContractKernels.SUM_CELLS, ONE, 2, cells, cells);
				assertThat(listener.take()).extracting(KernelLoad::kernel, KernelLoad::trigger)
					.containsExactly(tuple("append", Trigger.LAUNCH), tuple("sum_cells", Trigger.LOAD));
				launcher.currentStream().synchronize();
				lease.stream().synchronize();
			}
		}
		assertThat(listener.take()).as("loads after open").isEmpty();
	}

	@Test
	void aLoadWhileWorkIsInFlightSaysSoAndCountsAsWaitedFromTheThreshold() throws Exception {
		Loads listener = new Loads();
		try (GpuContext context = builder().kernelTiming(KernelTiming.OFF).listener(listener)
			.kernelLoadWaitThreshold(Duration.ZERO)
			.kernels(ContractKernels.SLEEP_THEN_SET)
			.open()) {
			listener.take();
			GpuLauncher launcher = context.launcher();
			try (StreamLease busy = context.streams().acquire(); DeviceBuffer cell = launcher.upload(HostArray.of(new int[1]))) {
				busy.stream().waitFor(cell.stream());
				launcher.launch(busy.stream(), launcher.kernel("sleep_then_set"), ONE, cell, 0, 1, 1000);
				assertThat(busy.stream().isIdle()).as("the slow kernel is running").isFalse();
				launcher.load(ContractKernels.SAXPY);
				KernelLoad load = listener.take().get(0);
				// A record for the GPU run's log, not an assertion: on CUDA the load step includes the wait.
				System.out.printf("kernel load while a 1 s kernel runs (%s): load %d ms, of which the load step %d ms%n",
						context.backend(), load.time().toMillis(), load.deviceTime().toMillis());
				assertThat(load.kernel()).isEqualTo("saxpy");
				assertThat(load.workInFlight()).as("a pooled stream was busy when the load began").isTrue();
				assertThat(load.waited()).as("work in flight and a load step of at least the zero threshold").isTrue();
				busy.stream().synchronize();
			}
			// Idle again (the buffer's free and every future done): a load that begins with nothing in flight
			// has not waited, whatever it took.
			context.synchronizeDevice();
			long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
			while (context.load().pendingWork() > 0 && System.nanoTime() < deadline) {
				Thread.sleep(1);
			}
			launcher.load(ContractKernels.COPY_CELL);
			KernelLoad idle = listener.take().get(0);
			assertThat(idle.workInFlight()).isFalse();
			assertThat(idle.waited()).isFalse();
		}
	}

	@Test
	void aKernelThatDoesNotLoadAtOpenFailsOpenAndLeavesNoThreadBehind() throws Exception {
		// Two different kernels of one name: the second load fails on every backend.
		KernelSource impostor = KernelSource.named("saxpy").params(ParamType.INT).cudaResource("contract/contract-kernels.ptx")
			.cpu((block, args) -> {
			});
		java.util.Set<Thread> before = RuntimeThreads.snapshot();
		assertThatThrownBy(() -> builder().kernels(ContractKernels.SAXPY, impostor).open())
			.isInstanceOf(GpuException.class)
			.hasMessageContaining("A different kernel named 'saxpy' is already loaded");
		assertThat(RuntimeThreads.leftSince(before, 10)).as("threads of the context that failed to open").isEmpty();
	}

	@Test
	void kernelsAtOpenAndTheThresholdRejectBadInput() {
		assertThatThrownBy(() -> GpuContext.builder().kernels(ContractKernels.SAXPY, null))
			.isInstanceOf(NullPointerException.class)
			.hasMessage("kernels[1] is null");
		assertThatThrownBy(() -> GpuContext.builder().kernels((KernelSource[]) null)).isInstanceOf(NullPointerException.class)
			.hasMessage("sources");
		assertThatThrownBy(() -> GpuContext.builder().kernelLoadWaitThreshold(Duration.ofMillis(-1)))
			.isInstanceOf(IllegalArgumentException.class)
			.hasMessageContaining("kernelLoadWaitThreshold must not be negative");
		assertThatThrownBy(() -> GpuContext.builder().kernelLoadWaitThreshold(null)).isInstanceOf(NullPointerException.class)
			.hasMessageContaining("kernelLoadWaitThreshold");
	}

}
