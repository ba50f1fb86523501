package dev.gpucompute.benchmarks;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import jcuda.driver.CUdeviceptr;
import jcuda.driver.CUstream;
import jcuda.driver.JCudaDriver;

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
import dev.gpucompute.HostArray;
import dev.gpucompute.Kernel;
import dev.gpucompute.LaunchConfig;
import dev.gpucompute.StreamLease;

/**
 * Benchmark 3: SAXPY ({@code y = a * x + y}) over {@code n} floats, one launch plus one
 * synchronisation per operation. Each pass reads x and y and writes y: 12 bytes per element, reported
 * as the {@code bytes} secondary metric (bytes per second).
 *
 * <ul>
 * <li>{@code ours}: the kernel launched through {@link GpuLauncher} on device buffers.</li>
 * <li>{@code baseline_javaLoop}: a hand-written loop over off-heap (direct) float buffers, split
 * into as many contiguous chunks as the CPU backend has worker threads, on a fixed pool of that
 * size.</li>
 * <li>{@code cuda_deviceCopy}: a raw device-to-device copy of {@code 4n} bytes (reads 4n, writes 4n):
 * the device's memory bandwidth, the ceiling for SAXPY at {@code backend=CUDA}.</li>
 * </ul>
 * Every variant checks its first result in setup, so a broken kernel cannot look fast.
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
public class SaxpyBenchmark {

	static final float A = 2f;

	/** Bit pattern 0x3F3F3F3F, about 0.747: what {@code fill((byte) 0x3F)} gives. */
	static final float X0 = Float.intBitsToFloat(0x3F3F3F3F);

	/** Bit pattern 0x40404040, about 3.004. */
	static final float Y0 = Float.intBitsToFloat(0x40404040);

	static void check(String who, FloatBuffer y, int index) {
		float expected = A * X0 + Y0;
		float actual = y.get(index);
		if (Math.abs(actual - expected) > 1e-5f * expected) {
			throw new IllegalStateException(who + " computed y[" + index + "] = " + actual + ", expected " + expected);
		}
	}

	@State(Scope.Thread)
	public static class Ours {

		@Param({ "CPU" })
		public Backend backend;

		/** 64M floats: 256 MiB per vector. */
		@Param({ "67108864" })
		public int n;

		@Param({ "256" })
		public int blockSize;

		GpuContext context;

		GpuLauncher launcher;

		Kernel kernel;

		LaunchConfig config;

		StreamLease lease;

		GpuStream stream;

		DeviceBuffer x;

		DeviceBuffer y;

		@Setup(Level.Trial)
		public void open() {
			this.context = Bench.open(this.backend, (builder) -> builder);
			this.launcher = this.context.launcher();
			this.kernel = this.launcher.load(Bench.SAXPY);
			this.config = LaunchConfig.linear(this.n, this.blockSize);
			this.lease = this.context.streams().acquire();
			this.stream = this.lease.stream();
			long bytes = 4L * this.n;
			this.x = this.launcher.callWithStream(this.stream, () -> this.launcher.allocate(bytes, ElementType.BYTE));
			this.y = this.launcher.callWithStream(this.stream, () -> this.launcher.allocate(bytes, ElementType.BYTE));
			this.x.fill((byte) 0x3F, this.stream);
			this.y.fill((byte) 0x40, this.stream);
			pass();
			ByteBuffer head = ByteBuffer.allocateDirect(4096).order(ByteOrder.nativeOrder());
			ByteBuffer tail = ByteBuffer.allocateDirect(4096).order(ByteOrder.nativeOrder());
			this.y.download(HostArray.of(head), 0, this.stream).join();
			this.y.download(HostArray.of(tail), bytes - 4096, this.stream).join();
			check("ours", head.asFloatBuffer(), 0);
			check("ours", tail.asFloatBuffer(), 1023);
			this.y.fill((byte) 0x40, this.stream);
			this.stream.synchronize();
		}

		void pass() {
			this.launcher.launch(this.stream, this.kernel, this.config, this.n, A, this.x, this.y);
			this.stream.synchronize();
		}

		@TearDown(Level.Trial)
		public void close() {
			this.x.close();
			this.y.close();
			this.lease.close();
			this.context.close();
		}

	}

	@State(Scope.Thread)
	public static class JavaLoop {

		@Param({ "67108864" })
		public int n;

		ExecutorService pool;

		FloatBuffer x;

		FloatBuffer y;

		List<Callable<Void>> chunks;

		@Setup(Level.Trial)
		public void open() throws Exception {
			this.pool = Executors.newFixedThreadPool(Bench.THREADS);
			this.x = filled(this.n, (byte) 0x3F);
			this.y = filled(this.n, (byte) 0x40);
			this.chunks = new ArrayList<>();
			for (int t = 0; t < Bench.THREADS; t++) {
				int from = (int) ((long) this.n * t / Bench.THREADS);
				int to = (int) ((long) this.n * (t + 1) / Bench.THREADS);
				this.chunks.add(() -> {
					saxpy(A, this.x, this.y, from, to);
					return null;
				});
			}
			pass();
			check("baseline", this.y, 0);
			check("baseline", this.y, this.n - 1);
		}

		private static FloatBuffer filled(int n, byte value) {
			ByteBuffer bytes = ByteBuffer.allocateDirect(4 * n).order(ByteOrder.nativeOrder());
			for (int i = 0; i < bytes.capacity(); i++) {
				bytes.put(i, value);
			}
			return bytes.asFloatBuffer();
		}

		private static void saxpy(float a, FloatBuffer x, FloatBuffer y, int from, int to) {
			for (int i = from; i < to; i++) {
				y.put(i, a * x.get(i) + y.get(i));
			}
		}

		void pass() throws Exception {
			for (Future<Void> done : this.pool.invokeAll(this.chunks)) {
				done.get();
			}
		}

		@TearDown(Level.Trial)
		public void close() {
			this.pool.shutdownNow();
		}

	}

	@State(Scope.Thread)
	public static class DeviceCopy {

		@Param({ "67108864" })
		public int n;

		RawCuda cuda;

		CUstream stream;

		final CUdeviceptr src = new CUdeviceptr();

		final CUdeviceptr dst = new CUdeviceptr();

		@Setup(Level.Trial)
		public void open() {
			this.cuda = new RawCuda();
			this.stream = this.cuda.stream();
			RawCuda.check(JCudaDriver.cuMemAlloc(this.src, 4L * this.n), "cuMemAlloc");
			RawCuda.check(JCudaDriver.cuMemAlloc(this.dst, 4L * this.n), "cuMemAlloc");
		}

		@Setup(Level.Iteration)
		public void current() {
			this.cuda.makeCurrent();
		}

		@TearDown(Level.Trial)
		public void close() {
			this.cuda.makeCurrent();
			RawCuda.check(JCudaDriver.cuMemFree(this.src), "cuMemFree");
			RawCuda.check(JCudaDriver.cuMemFree(this.dst), "cuMemFree");
			this.cuda.close();
		}

	}

	@Benchmark
	public void ours(Ours state, Traffic traffic) {
		state.pass();
		traffic.bytes += 12L * state.n;
	}

	@Benchmark
	public void baseline_javaLoop(JavaLoop state, Traffic traffic) throws Exception {
		state.pass();
		traffic.bytes += 12L * state.n;
	}

	@Benchmark
	public void cuda_deviceCopy(DeviceCopy state, Traffic traffic) {
		RawCuda.check(JCudaDriver.cuMemcpyDtoDAsync(state.dst, state.src, 4L * state.n, state.stream), "cuMemcpyDtoDAsync");
		RawCuda.check(JCudaDriver.cuStreamSynchronize(state.stream), "cuStreamSynchronize");
		traffic.bytes += 8L * state.n;
	}

}
