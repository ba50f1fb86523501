package dev.gpucompute.benchmarks;

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
import dev.gpucompute.StreamLease;

/**
 * A steady allocate / free / synchronise loop, as a service that allocates a
 * temporary buffer per request and waits for its result does. On CUDA the caching allocator serves
 * every round after the first from its cache; the raw stream-ordered allocator of JCuda 12.6 (whose
 * pool release threshold cannot be set, so stays 0) gives the memory back to the driver at each
 * synchronisation and maps it again at the next allocation.
 *
 * <ul>
 * <li>{@code ours_allocFreeSync}: {@code launcher.allocate(bytes, ElementType.BYTE)}, {@code close()},
 * {@code stream.synchronize()}; {@code releaseThreshold} {@code max} keeps everything cached, {@code 0}
 * caches nothing (one driver allocation and free per round).</li>
 * <li>{@code cuda_allocAsyncFreeSync}: raw {@code cuMemAllocAsync}, {@code cuMemFreeAsync},
 * {@code cuStreamSynchronize}.</li>
 * <li>{@code cuda_allocFree}: raw {@code cuMemAlloc}, {@code cuMemFree}.</li>
 * </ul>
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
public class AllocatorBenchmark {

	@State(Scope.Thread)
	public static class Ours {

		@Param({ "CPU" })
		public Backend backend;

		/** 1 MiB and 64 MiB. */
		@Param({ "1048576", "67108864" })
		public long bytes;

		/** {@code max}: cache everything; {@code 0}: cache nothing. */
		@Param({ "max", "0" })
		public String releaseThreshold;

		GpuContext context;

		StreamLease lease;

		GpuStream stream;

		GpuLauncher launcher;

		@Setup(Level.Trial)
		public void open() {
			long threshold = "max".equals(this.releaseThreshold) ? Long.MAX_VALUE : Long.parseLong(this.releaseThreshold);
			this.context = Bench.open(this.backend, (builder) -> builder.memoryPoolReleaseThreshold(threshold));
			this.launcher = this.context.launcher();
			this.lease = this.context.streams().acquire();
			this.stream = this.lease.stream();
		}

		@TearDown(Level.Trial)
		public void close() {
			this.lease.close();
			this.context.close();
		}

	}

	@State(Scope.Thread)
	public static class Raw {

		@Param({ "1048576", "67108864" })
		public long bytes;

		RawCuda cuda;

		CUstream stream;

		final CUdeviceptr device = new CUdeviceptr();

		@Setup(Level.Trial)
		public void open() {
			this.cuda = new RawCuda();
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
	public void ours_allocFreeSync(Ours state) {
		DeviceBuffer buffer = state.launcher.callWithStream(state.stream, () -> state.launcher.allocate(state.bytes, ElementType.BYTE));
		buffer.close();
		state.stream.synchronize();
	}

	@Benchmark
	public void cuda_allocAsyncFreeSync(Raw state) {
		RawCuda.check(JCudaDriver.cuMemAllocAsync(state.device, state.bytes, state.stream), "cuMemAllocAsync");
		RawCuda.check(JCudaDriver.cuMemFreeAsync(state.device, state.stream), "cuMemFreeAsync");
		RawCuda.check(JCudaDriver.cuStreamSynchronize(state.stream), "cuStreamSynchronize");
	}

	@Benchmark
	public void cuda_allocFree(Raw state) {
		RawCuda.check(JCudaDriver.cuMemAlloc(state.device, state.bytes), "cuMemAlloc");
		RawCuda.check(JCudaDriver.cuMemFree(state.device), "cuMemFree");
	}

}
