package dev.gpucompute.benchmarks;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

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
import dev.gpucompute.Dim3;
import dev.gpucompute.ElementType;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuLauncher;
import dev.gpucompute.HostArray;
import dev.gpucompute.KernelSource;
import dev.gpucompute.LaunchConfig;
import dev.gpucompute.StreamLease;
import dev.gpucompute.StreamScope;
import dev.gpucompute.expression.ElementwiseKernel;
import dev.gpucompute.expression.Reduction;
import dev.gpucompute.expression.ReductionKernel;

/**
 * Kernels written once against the same kernels written by hand, in one run: SAXPY and a float sum,
 * each one launch (the sum: its two launches) and a synchronisation per operation. On the CPU backend
 * this compares the generated Java body with a hand-written one (goal: at least 0.9x); on CUDA, the
 * generated CUDA C with a hand-written kernel (goal: at least 0.95x). {@code load_*}: the time to
 * define a SAXPY-sized kernel (parse, check, generate, compile the Java body; goal: under 50 ms), for
 * a new definition each time and for one already compiled (the cache).
 *
 * <p>Setup checks that both kernels give the same results (the sum: the same bits), so a broken
 * kernel cannot look fast.
 */
public class ExpressionKernelBenchmark {

	static final KernelSource SAXPY = ElementwiseKernel.named("saxpy_expr").in("float a, float[] x").out("float[] y")
		.body("y = a * x + y").build();

	static final Reduction SUM = ReductionKernel.named("sum_expr").in("float[] x").out("float[] total").map("x")
		.reduce("a + b").identity("0.0f").build();

	@State(Scope.Thread)
	public static class Device {

		@Param({ "CPU" })
		public Backend backend;

		/** 16M floats: 64 MiB per vector. */
		@Param({ "16777216" })
		public int n;

		GpuContext context;

		GpuLauncher launcher;

		StreamLease lease;

		StreamScope scope;

		DeviceBuffer x;

		DeviceBuffer y;

		DeviceBuffer total;

		DeviceBuffer partials;

		LaunchConfig linear;

		@Setup(Level.Trial)
		public void open() {
			this.context = Bench.open(this.backend, (builder) -> builder);
			this.launcher = this.context.launcher();
			this.launcher.load(SAXPY);
			this.launcher.load(HandWritten.SAXPY);
			this.launcher.load(SUM.source());
			this.launcher.load(HandWritten.SUM);
			this.lease = this.context.streams().acquire();
			this.scope = this.launcher.useStream(this.lease.stream());
			float[] values = new float[this.n];
			java.util.SplittableRandom random = new java.util.SplittableRandom(1);
			for (int i = 0; i < this.n; i++) {
				values[i] = (float) random.nextDouble(-1, 1);
			}
			this.x = this.launcher.upload(HostArray.of(values));
			this.y = this.launcher.upload(HostArray.of(values));
			this.total = this.launcher.allocate(1, ElementType.FLOAT);
			this.partials = this.launcher.allocate((this.n + HandWritten.CHUNK - 1) / HandWritten.CHUNK, ElementType.FLOAT);
			this.linear = LaunchConfig.linear(this.n, 256);
			check();
		}

		private void check() {
			float[] generated = new float[1];
			float[] hand = new float[1];
			SUM.launch(this.launcher, this.n, this.x, this.total);
			this.total.download(HostArray.of(generated)).join();
			handSum();
			this.total.download(HostArray.of(hand)).join();
			if (Float.floatToIntBits(generated[0]) != Float.floatToIntBits(hand[0])) {
				throw new IllegalStateException("The sums differ: generated " + generated[0] + ", hand-written " + hand[0]);
			}
			float[] a = new float[4096];
			float[] b = new float[4096];
			try (DeviceBuffer y2 = this.launcher.allocate(this.n, ElementType.FLOAT)) {
				y2.copyFrom(this.y, 0, 0, 4L * this.n);
				this.launcher.launch(SAXPY, this.linear, this.n, 2f, this.x, this.y);
				this.launcher.launch(HandWritten.SAXPY, this.linear, this.n, 2f, this.x, y2);
				this.y.download(HostArray.of(a), 0, this.lease.stream()).join();
				y2.download(HostArray.of(b), 0, this.lease.stream()).join();
			}
			if (!java.util.Arrays.equals(a, b)) {
				throw new IllegalStateException("The SAXPY kernels differ");
			}
		}

		void handSum() {
			int chunks = (this.n + HandWritten.CHUNK - 1) / HandWritten.CHUNK;
			this.launcher.launch(HandWritten.SUM, LaunchConfig.of(Dim3.of(chunks), Dim3.of(256)), this.n, this.x,
					this.partials, this.total, 1);
			this.launcher.launch(HandWritten.SUM, LaunchConfig.of(Dim3.of(1), Dim3.of(256)), this.n, this.x, this.partials,
					this.total, 2);
		}

		@TearDown(Level.Trial)
		public void close() {
			this.x.close();
			this.y.close();
			this.total.close();
			this.partials.close();
			this.scope.close();
			this.lease.close();
			this.context.close();
		}

	}

	@Benchmark
	@BenchmarkMode(Mode.Throughput)
	@OutputTimeUnit(TimeUnit.SECONDS)
	public void saxpy_generated(Device d) {
		d.launcher.launch(SAXPY, d.linear, d.n, 2f, d.x, d.y);
		d.lease.stream().synchronize();
	}

	@Benchmark
	@BenchmarkMode(Mode.Throughput)
	@OutputTimeUnit(TimeUnit.SECONDS)
	public void saxpy_handWritten(Device d) {
		d.launcher.launch(HandWritten.SAXPY, d.linear, d.n, 2f, d.x, d.y);
		d.lease.stream().synchronize();
	}

	@Benchmark
	@BenchmarkMode(Mode.Throughput)
	@OutputTimeUnit(TimeUnit.SECONDS)
	public void sum_generated(Device d) {
		SUM.launch(d.launcher, d.n, d.x, d.total);
		d.lease.stream().synchronize();
	}

	@Benchmark
	@BenchmarkMode(Mode.Throughput)
	@OutputTimeUnit(TimeUnit.SECONDS)
	public void sum_handWritten(Device d) {
		d.handSum();
		d.lease.stream().synchronize();
	}

	/**
	 * A definition not seen before: every call parses, checks, generates and compiles. Defining a kernel
	 * needs no device; {@code backend} is here so that a run with {@code -p backend=CUDA} has a value
	 * for it in every benchmark of the class.
	 */
	@State(Scope.Benchmark)
	public static class Names {

		@Param({ "CPU" })
		public Backend backend;

		final AtomicLong next = new AtomicLong();

	}

	@Benchmark
	@BenchmarkMode(Mode.AverageTime)
	@OutputTimeUnit(TimeUnit.MILLISECONDS)
	public KernelSource load_saxpyNew(Names names) {
		return ElementwiseKernel.named("saxpy_" + names.next.incrementAndGet()).in("float a, float[] x").out("float[] y")
			.body("y = a * x + y").build();
	}

	@Benchmark
	@BenchmarkMode(Mode.AverageTime)
	@OutputTimeUnit(TimeUnit.MILLISECONDS)
	public KernelSource load_saxpyCached(Names names) {
		return ElementwiseKernel.named("saxpy_expr").in("float a, float[] x").out("float[] y").body("y = a * x + y").build();
	}

}
