package dev.gpucompute.benchmarks;

import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

import jcuda.driver.CUfunction;
import jcuda.driver.CUstream;
import jcuda.driver.JCudaDriver;

import org.jspecify.annotations.Nullable;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.CompilerControl;
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
import dev.gpucompute.CpuKernel;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuLauncher;
import dev.gpucompute.Kernel;
import dev.gpucompute.LaunchConfig;
import dev.gpucompute.StreamLease;
import dev.gpucompute.StreamScope;
import dev.gpucompute.listener.GpuListener;
import dev.gpucompute.settings.KernelTiming;

/**
 * Benchmark 2: the launch path. One operation is a batch of {@value #BATCH} launches of an empty
 * kernel (one block of one thread) followed by one synchronisation, so the queue cannot grow
 * without bound and the synchronisation is spread over the batch; every variant, baselines
 * included, does exactly that. Scores are per launch.
 *
 * <ul>
 * <li>{@code ours}: {@link GpuLauncher#launch} on a leased pooled stream made current, with
 * {@code kernelTiming} off, sampled and all, and with no listener or a counting one.</li>
 * <li>{@code baseline_javaDirect}: the kernel's Java implementation called on the calling thread,
 * once per block: the floor on the CPU backend (no queue, no other thread).</li>
 * <li>{@code baseline_javaExecutor}: the same call handed to a single-thread executor, then waiting
 * for the last one: what a Java user would write for ordered asynchronous work.</li>
 * <li>{@code cuda_rawLaunch}: a raw JCuda {@code cuLaunchKernel} loop on a non-blocking stream,
 * then {@code cuStreamSynchronize}: compare with {@code ours} at {@code backend=CUDA}.</li>
 * </ul>
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@OperationsPerInvocation(LaunchBenchmark.BATCH)
public class LaunchBenchmark {

	static final int BATCH = 1000;

	private static final LaunchConfig ONE_BLOCK = LaunchConfig.linear(1, 1);

	@State(Scope.Thread)
	public static class Ours {

		@Param({ "CPU" })
		public Backend backend;

		@Param({ "OFF", "SAMPLED", "ALL" })
		public KernelTiming timing;

		/** {@code none}: no listener ({@link GpuListener#NONE}); {@code counting}: {@link CountingListener}. */
		@Param({ "none", "counting" })
		public String listener;

		GpuContext context;

		GpuLauncher launcher;

		Kernel kernel;

		private @Nullable CountingListener counting;

		private StreamLease lease;

		private StreamScope scope;

		@Setup(Level.Trial)
		public void open() {
			this.counting = "counting".equals(this.listener) ? new CountingListener() : null;
			GpuListener chosen = (this.counting != null) ? this.counting : GpuListener.NONE;
			this.context = Bench.open(this.backend, (builder) -> builder.kernelTiming(this.timing).listener(chosen));
			this.launcher = this.context.launcher();
			this.kernel = this.launcher.load(Bench.EMPTY);
			// Setup runs on the benchmark thread, so the scope makes the pooled stream current there.
			this.lease = this.context.streams().acquire();
			this.scope = this.launcher.useStream(this.lease.stream());
		}

		@TearDown(Level.Trial)
		public void close() {
			this.launcher.currentStream().synchronize();
			Kernel.KernelStats stats = this.kernel.stats();
			if (this.counting != null && this.counting.launches.sum() != stats.launches()) {
				throw new IllegalStateException("The listener saw " + this.counting.launches.sum() + " launches, the kernel "
						+ stats.launches());
			}
			if (this.timing == KernelTiming.OFF && stats.timedLaunches() != 0) {
				throw new IllegalStateException("Launches were timed with kernel timing off: " + stats);
			}
			this.scope.close();
			this.lease.close();
			this.context.close();
		}

	}

	@State(Scope.Thread)
	public static class Direct {

		final CpuKernel implementation = Objects.requireNonNull(Bench.EMPTY.cpu());

		final Blocks.Block block = new Blocks.Block(ONE_BLOCK);

		final Blocks.NoArgs args = new Blocks.NoArgs();

		ExecutorService executor;

		@Setup(Level.Trial)
		public void open() {
			this.executor = Executors.newSingleThreadExecutor();
		}

		@TearDown(Level.Trial)
		public void close() {
			this.executor.shutdownNow();
		}

	}

	@State(Scope.Thread)
	public static class RawLaunch {

		RawCuda cuda;

		CUfunction function;

		CUstream stream;

		@Setup(Level.Trial)
		public void open() {
			this.cuda = new RawCuda();
			this.function = this.cuda.function(Bench.EMPTY_PTX, "empty");
			this.stream = this.cuda.stream();
		}

		@Setup(Level.Iteration)
		public void current() {
			this.cuda.makeCurrent();
		}

		@TearDown(Level.Trial)
		public void close() {
			this.cuda.close();
		}

	}

	@Benchmark
	public void ours(Ours state) {
		GpuLauncher launcher = state.launcher;
		Kernel kernel = state.kernel;
		for (int i = 0; i < BATCH; i++) {
			launcher.launch(kernel, ONE_BLOCK);
		}
		launcher.currentStream().synchronize();
	}

	@Benchmark
	public void baseline_javaDirect(Direct state) {
		long blocks = ONE_BLOCK.grid().volume();
		for (int i = 0; i < BATCH; i++) {
			for (long b = 0; b < blocks; b++) {
				state.block.moveTo(b);
				call(state.implementation, state.block, state.args);
			}
		}
	}

	/**
	 * Not inlined, so the empty body costs one real call per block instead of being folded away,
	 * as no kernel with a body could be.
	 */
	@CompilerControl(CompilerControl.Mode.DONT_INLINE)
	private static void call(CpuKernel implementation, Blocks.Block block, Blocks.NoArgs args) {
		implementation.run(block, args);
	}

	@Benchmark
	public void baseline_javaExecutor(Direct state) throws Exception {
		CompletableFuture<Void> last = null;
		for (int i = 0; i < BATCH; i++) {
			last = CompletableFuture.runAsync(() -> {
				state.block.moveTo(0);
				state.implementation.run(state.block, state.args);
			}, state.executor);
		}
		Objects.requireNonNull(last).get(); // BATCH > 0
	}

	@Benchmark
	public void cuda_rawLaunch(RawLaunch state) {
		for (int i = 0; i < BATCH; i++) {
			RawCuda.check(JCudaDriver.cuLaunchKernel(state.function, 1, 1, 1, 1, 1, 1, 0, state.stream, null, null), "cuLaunchKernel");
		}
		RawCuda.check(JCudaDriver.cuStreamSynchronize(state.stream), "cuStreamSynchronize");
	}

}
