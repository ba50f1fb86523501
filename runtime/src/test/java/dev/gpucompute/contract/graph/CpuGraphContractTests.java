package dev.gpucompute.contract.graph;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.concurrent.CompletionException;

import org.junit.jupiter.api.Test;

import dev.gpucompute.Backend;
import dev.gpucompute.DeviceBuffer;
import dev.gpucompute.Dim3;
import dev.gpucompute.ElementType;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuContextBuilder;
import dev.gpucompute.GpuStream;
import dev.gpucompute.HostArray;
import dev.gpucompute.Kernel;
import dev.gpucompute.KernelLaunchException;
import dev.gpucompute.LaunchConfig;
import dev.gpucompute.StreamLease;
import dev.gpucompute.contract.ContractKernels;
import dev.gpucompute.graph.GpuGraph;

/**
 * The graph contract on the CPU backend, which runs on every machine; plus what only the CPU backend
 * can show without ending its context: a failure inside a replay follows the stream's failure rules.
 */
class CpuGraphContractTests extends GraphContractSuite {

	@Override
	protected GpuContextBuilder builder() {
		return GpuContext.builder().backend(Backend.CPU).cpuThreads(4);
	}

	@Test
	void aFailureInsideAReplayIsReportedOnceToItsWaiterAndTheStreamGoesOn() {
		Kernel bounded = kernel(ContractKernels.BOUNDED_SAXPY);
		Kernel append = kernel(ContractKernels.APPEND);
		int n = 64;
		try (StreamLease lease = this.pool.acquire(); DeviceBuffer x = this.launcher.allocate(n, ElementType.FLOAT);
				DeviceBuffer y = this.launcher.allocate(n, ElementType.FLOAT); DeviceBuffer log = zerosFor(lease.stream(), 4)) {
			GpuStream stream = lease.stream();
			stream.waitFor(x.stream());
			try (GpuGraph graph = graphs().capture("failing", stream, () -> {
				this.launcher.launch(bounded, LaunchConfig.of(Dim3.of(1), Dim3.of(64)), n, 1f, x, y); // fails when it runs
				this.launcher.launch(append, ONE, log, 1); // still runs, as it would on the stream
			})) {
				assertThatThrownBy(() -> graph.replay(stream).join()).isInstanceOf(CompletionException.class)
					.cause().isInstanceOfSatisfying(KernelLaunchException.class, (ex) -> {
						assertThat(ex.kernelName()).isEqualTo("bounded_saxpy");
						assertThat(ex.getMessage()).contains(stream.name());
					});
				stream.synchronize(); // reported once: nothing left to throw
				assertThat(read(log, 2, stream)).containsExactly(1, 1);
				assertThat(bounded.stats().errors()).as("counted").isEqualTo(1);
			}
		}
		assertNothingLeaked();
	}

	@Test
	void aReplayOfManyBlocksSpreadsThemAndRunsEveryOne() {
		Kernel saxpy = kernel(ContractKernels.SAXPY);
		int n = 4096;
		try (StreamLease lease = this.pool.acquire(); DeviceBuffer x = this.launcher.allocate(n, ElementType.FLOAT);
				DeviceBuffer y = this.launcher.allocate(n, ElementType.FLOAT)) {
			GpuStream stream = lease.stream();
			x.upload(HostArray.of(filled(n, 1f)), stream);
			y.upload(HostArray.of(filled(n, 0f)), stream);
			try (GpuGraph graph = graphs().capture("wide", stream, () -> {
				for (int i = 0; i < 3; i++) {
					this.launcher.launch(saxpy, LaunchConfig.linear(n, 32), n, 1f, x, y);
				}
			})) {
				graph.launch(stream);
				assertThat(floats(y, n, stream)).containsOnly(3f);
			}
		}
		assertNothingLeaked();
	}

}
