package dev.gpucompute.benchmarks;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import jcuda.Pointer;
import jcuda.driver.CUdeviceptr;
import jcuda.driver.CUevent;
import jcuda.driver.CUevent_flags;
import jcuda.driver.CUstream;
import jcuda.driver.CUstreamCallback;
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
import dev.gpucompute.DeviceBuffer;
import dev.gpucompute.ElementType;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuLauncher;
import dev.gpucompute.GpuStream;
import dev.gpucompute.HostArray;
import dev.gpucompute.StreamLease;

/**
 * 10,000 small (256-byte) uploads, each with its own completion future, then a
 * wait for all of them. The score is per upload. It measures the completion path: every upload's
 * future completes through {@code NativeStream.whenDone}, which on CUDA records a recycled event
 * polled by one completion thread (before: one {@code cuStreamAddCallback} per upload).
 *
 * <ul>
 * <li>{@code ours_uploads}: {@link DeviceBuffer#upload(HostArray, GpuStream)} of an {@code int[]}
 * 10,000 times on a leased stream, then {@code join()} of every future.</li>
 * <li>{@code cuda_uploadsWithStreamCallback}: raw JCuda, the old path: {@code cuMemcpyHtoDAsync}
 * from page-locked memory plus {@code cuStreamAddCallback} per upload, then a wait for the last
 * callback.</li>
 * <li>{@code cuda_uploadsWithEvents}: raw JCuda, the new path by hand: {@code cuMemcpyHtoDAsync}
 * plus {@code cuEventRecord} of one of 64 recycled events per upload, then a
 * {@code cuStreamSynchronize}.</li>
 * <li>{@code cuda_uploadsOnly}: the floor: 10,000 {@code cuMemcpyHtoDAsync} and one
 * {@code cuStreamSynchronize}, no per-upload completion at all.</li>
 * </ul>
 * The CUDA variants need a device; without one they stop at setup with the reason.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
public class SmallUploadBenchmark {

	static final int UPLOADS = 10_000;

	static final int BYTES = 256;

	@State(Scope.Thread)
	public static class Ours {

		@Param({ "CPU" })
		public Backend backend;

		GpuContext context;

		StreamLease lease;

		GpuStream stream;

		DeviceBuffer device;

		// Made once: the benchmark times the uploads, not the making of a HostArray.
		final HostArray data = HostArray.of(new int[BYTES / Integer.BYTES]);

		@SuppressWarnings("unchecked")
		final CompletableFuture<Void>[] futures = new CompletableFuture[UPLOADS];

		@Setup(Level.Trial)
		public void open() {
			this.context = Bench.open(this.backend, (builder) -> builder);
			GpuLauncher launcher = this.context.launcher();
			this.lease = this.context.streams().acquire();
			this.stream = this.lease.stream();
			this.device = launcher.callWithStream(this.stream, () -> launcher.allocate(BYTES, ElementType.BYTE));
		}

		@TearDown(Level.Trial)
		public void close() {
			this.device.close();
			this.lease.close();
			this.context.close();
		}

	}

	@State(Scope.Thread)
	public static class Raw {

		RawCuda cuda;

		CUstream stream;

		final CUdeviceptr device = new CUdeviceptr();

		final Pointer pinned = new Pointer();

		final CUevent[] events = new CUevent[64];

		@Setup(Level.Trial)
		public void open() {
			this.cuda = new RawCuda();
			this.stream = this.cuda.stream();
			RawCuda.check(JCudaDriver.cuMemAlloc(this.device, BYTES), "cuMemAlloc");
			RawCuda.check(JCudaDriver.cuMemAllocHost(this.pinned, BYTES), "cuMemAllocHost");
			for (int i = 0; i < this.events.length; i++) {
				this.events[i] = new CUevent();
				RawCuda.check(JCudaDriver.cuEventCreate(this.events[i], CUevent_flags.CU_EVENT_DISABLE_TIMING), "cuEventCreate");
			}
		}

		@Setup(Level.Iteration)
		public void current() {
			this.cuda.makeCurrent();
		}

		@TearDown(Level.Trial)
		public void close() {
			this.cuda.makeCurrent();
			RawCuda.check(JCudaDriver.cuStreamSynchronize(this.stream), "cuStreamSynchronize");
			for (CUevent event : this.events) {
				RawCuda.check(JCudaDriver.cuEventDestroy(event), "cuEventDestroy");
			}
			RawCuda.check(JCudaDriver.cuMemFree(this.device), "cuMemFree");
			RawCuda.check(JCudaDriver.cuMemFreeHost(this.pinned), "cuMemFreeHost");
			this.cuda.close();
		}

	}

	@Benchmark
	@OperationsPerInvocation(UPLOADS)
	public void ours_uploads(Ours state) {
		for (int i = 0; i < UPLOADS; i++) {
			state.futures[i] = state.device.upload(state.data, state.stream);
		}
		for (CompletableFuture<Void> future : state.futures) {
			future.join();
		}
	}

	@Benchmark
	@OperationsPerInvocation(UPLOADS)
	public void cuda_uploadsWithStreamCallback(Raw state) throws InterruptedException {
		CountDownLatch done = new CountDownLatch(UPLOADS);
		CUstreamCallback callback = (stream, status, userData) -> done.countDown();
		for (int i = 0; i < UPLOADS; i++) {
			RawCuda.check(JCudaDriver.cuMemcpyHtoDAsync(state.device, state.pinned, BYTES, state.stream), "cuMemcpyHtoDAsync");
			RawCuda.check(JCudaDriver.cuStreamAddCallback(state.stream, callback, null, 0), "cuStreamAddCallback");
		}
		done.await();
	}

	@Benchmark
	@OperationsPerInvocation(UPLOADS)
	public void cuda_uploadsWithEvents(Raw state) {
		for (int i = 0; i < UPLOADS; i++) {
			RawCuda.check(JCudaDriver.cuMemcpyHtoDAsync(state.device, state.pinned, BYTES, state.stream), "cuMemcpyHtoDAsync");
			RawCuda.check(JCudaDriver.cuEventRecord(state.events[i & 63], state.stream), "cuEventRecord");
		}
		RawCuda.check(JCudaDriver.cuStreamSynchronize(state.stream), "cuStreamSynchronize");
	}

	@Benchmark
	@OperationsPerInvocation(UPLOADS)
	public void cuda_uploadsOnly(Raw state) {
		for (int i = 0; i < UPLOADS; i++) {
			RawCuda.check(JCudaDriver.cuMemcpyHtoDAsync(state.device, state.pinned, BYTES, state.stream), "cuMemcpyHtoDAsync");
		}
		RawCuda.check(JCudaDriver.cuStreamSynchronize(state.stream), "cuStreamSynchronize");
	}

}
