package dev.gpucompute.benchmarks;

import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

import dev.gpucompute.Backend;
import dev.gpucompute.DeviceBuffer;
import dev.gpucompute.ElementType;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuLauncher;
import dev.gpucompute.GpuStream;
import dev.gpucompute.Kernel;
import dev.gpucompute.LaunchConfig;
import dev.gpucompute.StreamLease;

/**
 * Benchmark 4: two independent spin kernels (one block each) on one stream, where they run one
 * after the other, against two pooled streams, where they may overlap. The speed-up is
 * {@code ours_oneStream / ours_twoStreams}; {@code ours_parallelGroup} does the same through
 * {@link GpuLauncher#parallel(List)} (fork and join events on the current stream included). On the
 * CPU backend with 2 worker threads the ideal is 2.
 *
 * <p>The spin is counted work (xorshift rounds on the CPU, clock cycles on CUDA), not a sleep, so
 * a core taken by another process shows as lost speed-up rather than being hidden.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@State(Scope.Thread)
public class StreamsBenchmark {

	private static final LaunchConfig ONE_BLOCK = LaunchConfig.linear(1, 1);

	@Param({ "CPU" })
	public Backend backend;

	/** CPU backend: xorshift rounds per kernel (about 1.5 ms on the 2 GHz Xeon of BENCHMARKS.md). */
	@Param({ "500000" })
	public long cpuRounds;

	/** CUDA backend: clock cycles per kernel (about 1 ms at a 2 GHz SM clock). */
	@Param({ "2000000" })
	public long gpuCycles;

	private GpuContext context;

	private GpuLauncher launcher;

	private Kernel spin;

	private long work;

	private DeviceBuffer outA;

	private DeviceBuffer outB;

	private List<Consumer<GpuStream>> branches;

	@Setup(Level.Trial)
	public void open() {
		// Two workers: the speed-up can reach the number of cores used, no more.
		this.context = Bench.open(this.backend, (builder) -> builder.cpuThreads(2).poolSize(8));
		this.launcher = this.context.launcher();
		this.spin = this.launcher.load(Bench.SPIN);
		this.work = (this.backend == Backend.CPU) ? this.cpuRounds : this.gpuCycles;
		this.outA = this.launcher.allocate(8, ElementType.BYTE);
		this.outB = this.launcher.allocate(8, ElementType.BYTE);
		this.launcher.currentStream().synchronize();
		this.branches = List.of((stream) -> spin(stream, this.outA), (stream) -> spin(stream, this.outB));
	}

	@TearDown(Level.Trial)
	public void close() {
		this.outA.close();
		this.outB.close();
		this.context.close();
	}

	private void spin(GpuStream stream, DeviceBuffer out) {
		this.launcher.launch(stream, this.spin, ONE_BLOCK, this.work, out);
	}

	@Benchmark
	public void ours_oneStream() {
		try (StreamLease lease = this.context.streams().acquire()) {
			GpuStream stream = lease.stream();
			spin(stream, this.outA);
			spin(stream, this.outB);
			stream.synchronize();
		}
	}

	@Benchmark
	public void ours_twoStreams() {
		try (StreamLease a = this.context.streams().acquire(); StreamLease b = this.context.streams().acquire()) {
			spin(a.stream(), this.outA);
			spin(b.stream(), this.outB);
			a.stream().synchronize();
			b.stream().synchronize();
		}
	}

	@Benchmark
	public void ours_parallelGroup() {
		this.launcher.parallel(this.branches);
		this.launcher.currentStream().synchronize();
	}

}
