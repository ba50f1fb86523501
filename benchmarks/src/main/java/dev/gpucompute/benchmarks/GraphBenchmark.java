package dev.gpucompute.benchmarks;

import java.util.concurrent.TimeUnit;

import jcuda.driver.CUfunction;
import jcuda.driver.CUgraph;
import jcuda.driver.CUgraphExec;
import jcuda.driver.CUstream;
import jcuda.driver.CUstreamCaptureMode;
import jcuda.driver.JCudaDriver;

import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

import dev.gpucompute.Backend;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuLauncher;
import dev.gpucompute.GpuStream;
import dev.gpucompute.Kernel;
import dev.gpucompute.settings.KernelTiming;
import dev.gpucompute.LaunchConfig;
import dev.gpucompute.StreamLease;
import dev.gpucompute.StreamScope;
import dev.gpucompute.graph.GpuGraph;
import dev.gpucompute.graph.GpuGraphs;

/**
 * Graphs against launches: a pipeline of {@code kernels} tiny kernels (the empty kernel, one block of
 * one thread), enqueued {@value #PIPELINES} times and then synchronised once; scores are per pipeline.
 *
 * <ul>
 * <li>{@code ours_launches}: {@code kernels} {@link GpuLauncher#launch} calls per pipeline on a leased
 * stream made current;
 * <li>{@code ours_graph}: the same pipeline captured once into a {@link GpuGraph}, one
 * {@link GpuGraph#launch(GpuStream)} per pipeline;
 * <li>{@code cuda_rawLaunches}: raw JCuda, {@code kernels} {@code cuLaunchKernel} calls per pipeline on
 * a non-blocking stream;
 * <li>{@code cuda_rawGraph}: raw JCuda, the same launches captured with {@code cuStreamBeginCapture},
 * one {@code cuGraphLaunch} per pipeline.
 * </ul>
 *
 * <p>The ratios that matter, in one run: {@code ours_graph / ours_launches} at {@code kernels=10} (the
 * host's cost of a replay against the launches it replaces) and, on CUDA, {@code ours_graph /
 * cuda_rawGraph} (what the starter adds to a raw {@code cuGraphLaunch}).
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@OperationsPerInvocation(GraphBenchmark.PIPELINES)
public class GraphBenchmark {

	static final int PIPELINES = 100;

	private static final LaunchConfig ONE_BLOCK = LaunchConfig.linear(1, 1);

	@State(Scope.Thread)
	public static class Ours {

		@Param({ "CPU" })
		public Backend backend;

		@Param({ "1", "10", "100" })
		public int kernels;

		GpuContext context;

		GpuLauncher launcher;

		Kernel kernel;

		GpuStream stream;

		GpuGraph graph;

		private StreamLease lease;

		private StreamScope scope;

		@Setup(Level.Trial)
		public void open() {
			this.context = Bench.open(this.backend, (builder) -> builder.kernelTiming(KernelTiming.OFF));
			this.launcher = this.context.launcher();
			this.kernel = this.launcher.load(Bench.EMPTY);
			this.lease = this.context.streams().acquire();
			this.stream = this.lease.stream();
			this.graph = GpuGraphs.of(this.context).capture("pipeline", this.stream, () -> {
				for (int k = 0; k < this.kernels; k++) {
					this.launcher.launch(this.kernel, ONE_BLOCK);
				}
			});
			// Setup runs on the benchmark thread, so the scope makes the pooled stream current there.
			this.scope = this.launcher.useStream(this.stream);
		}

		@TearDown(Level.Trial)
		public void close() {
			this.launcher.currentStream().synchronize();
			long replays = this.graph.info().replays();
			this.graph.close();
			this.scope.close();
			this.lease.close();
			this.context.close();
			if (replays == 0 && this.kernel.stats().launches() == 0) {
				throw new IllegalStateException("Nothing was launched");
			}
		}

	}

	@State(Scope.Thread)
	public static class Raw {

		@Param({ "1", "10", "100" })
		public int kernels;

		RawCuda cuda;

		CUfunction function;

		CUstream stream;

		CUgraphExec graph;

		private CUgraph captured;

		@Setup(Level.Trial)
		public void open() {
			this.cuda = new RawCuda();
			this.function = this.cuda.function(Bench.EMPTY_PTX, "empty");
			this.stream = this.cuda.stream();
			RawCuda.check(JCudaDriver.cuStreamBeginCapture(this.stream,
					CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), "cuStreamBeginCapture");
			for (int k = 0; k < this.kernels; k++) {
				RawCuda.check(JCudaDriver.cuLaunchKernel(this.function, 1, 1, 1, 1, 1, 1, 0, this.stream, null, null),
						"cuLaunchKernel");
			}
			this.captured = new CUgraph();
			RawCuda.check(JCudaDriver.cuStreamEndCapture(this.stream, this.captured), "cuStreamEndCapture");
			this.graph = new CUgraphExec();
			RawCuda.check(JCudaDriver.cuGraphInstantiate(this.graph, this.captured, 0), "cuGraphInstantiate");
		}

		@Setup(Level.Iteration)
		public void current() {
			this.cuda.makeCurrent();
		}

		@TearDown(Level.Trial)
		public void close() {
			this.cuda.makeCurrent();
			RawCuda.check(JCudaDriver.cuStreamSynchronize(this.stream), "cuStreamSynchronize");
			RawCuda.check(JCudaDriver.cuGraphExecDestroy(this.graph), "cuGraphExecDestroy");
			RawCuda.check(JCudaDriver.cuGraphDestroy(this.captured), "cuGraphDestroy");
			this.cuda.close();
		}

	}

	@Benchmark
	public void ours_launches(Ours state) {
		GpuLauncher launcher = state.launcher;
		Kernel kernel = state.kernel;
		int kernels = state.kernels;
		for (int p = 0; p < PIPELINES; p++) {
			for (int k = 0; k < kernels; k++) {
				launcher.launch(kernel, ONE_BLOCK);
			}
		}
		launcher.currentStream().synchronize();
	}

	@Benchmark
	public void ours_graph(Ours state) {
		GpuGraph graph = state.graph;
		GpuStream stream = state.stream;
		for (int p = 0; p < PIPELINES; p++) {
			graph.launch(stream);
		}
		state.launcher.currentStream().synchronize();
	}

	@Benchmark
	public void cuda_rawLaunches(Raw state) {
		int kernels = state.kernels;
		for (int p = 0; p < PIPELINES; p++) {
			for (int k = 0; k < kernels; k++) {
				RawCuda.check(JCudaDriver.cuLaunchKernel(state.function, 1, 1, 1, 1, 1, 1, 0, state.stream, null, null),
						"cuLaunchKernel");
			}
		}
		RawCuda.check(JCudaDriver.cuStreamSynchronize(state.stream), "cuStreamSynchronize");
	}

	@Benchmark
	public void cuda_rawGraph(Raw state) {
		for (int p = 0; p < PIPELINES; p++) {
			RawCuda.check(JCudaDriver.cuGraphLaunch(state.graph, state.stream), "cuGraphLaunch");
		}
		RawCuda.check(JCudaDriver.cuStreamSynchronize(state.stream), "cuStreamSynchronize");
	}

}
