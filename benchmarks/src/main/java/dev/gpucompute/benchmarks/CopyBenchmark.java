package dev.gpucompute.benchmarks;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.concurrent.TimeUnit;

import jcuda.Pointer;
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
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuLauncher;
import dev.gpucompute.GpuStream;
import dev.gpucompute.StreamLease;

/**
 * Benchmark 6: host↔device copies of {@code bytes} bytes, waiting for each copy. The
 * {@code bytes} secondary metric counts the bytes copied (bytes per second).
 *
 * <ul>
 * <li>{@code ours_upload} / {@code ours_download}: {@link DeviceBuffer#upload(ByteBuffer, long, GpuStream)}
 * and {@link DeviceBuffer#download(ByteBuffer, long, GpuStream)} from and to a direct host buffer,
 * then {@code join()}. They go through the backend's staging memory (page-locked on CUDA).</li>
 * <li>{@code baseline_hostCopy}: one plain {@code ByteBuffer.put} between two direct buffers of the
 * same size: what a copy between host and CPU "device" memory costs at least.</li>
 * <li>{@code cuda_pageable*} / {@code cuda_pinned*}: raw JCuda {@code cuMemcpyHtoD}/{@code DtoH} from
 * a pageable direct buffer, and {@code cuMemcpy*Async} from page-locked memory plus
 * {@code cuStreamSynchronize}.</li>
 * </ul>
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
public class CopyBenchmark {

	private static ByteBuffer host(int bytes, byte value) {
		ByteBuffer buffer = ByteBuffer.allocateDirect(bytes).order(ByteOrder.nativeOrder());
		for (int i = 0; i < bytes; i += 4096) {
			buffer.put(i, value);
		}
		return buffer;
	}

	@State(Scope.Thread)
	public static class Ours {

		@Param({ "CPU" })
		public Backend backend;

		/** 1 MiB and 256 MiB. */
		@Param({ "1048576", "268435456" })
		public int bytes;

		GpuContext context;

		StreamLease lease;

		GpuStream stream;

		DeviceBuffer device;

		ByteBuffer source;

		ByteBuffer target;

		@Setup(Level.Trial)
		public void open() {
			this.context = Bench.open(this.backend, (builder) -> builder);
			GpuLauncher launcher = this.context.launcher();
			this.lease = this.context.streams().acquire();
			this.stream = this.lease.stream();
			this.device = launcher.callWithStream(this.stream, () -> launcher.allocate(this.bytes));
			this.source = host(this.bytes, (byte) 7);
			this.target = host(this.bytes, (byte) 0);
			this.device.upload(this.source, 0, this.stream).join();
			this.device.download(this.target, 0, this.stream).join();
			if (this.target.get(this.bytes - 4096) != 7) {
				throw new IllegalStateException("The round trip through the device lost the data");
			}
		}

		@TearDown(Level.Trial)
		public void close() {
			this.device.close();
			this.lease.close();
			this.context.close();
		}

	}

	@State(Scope.Thread)
	public static class HostCopy {

		@Param({ "1048576", "268435456" })
		public int bytes;

		ByteBuffer source;

		ByteBuffer target;

		@Setup(Level.Trial)
		public void open() {
			this.source = host(this.bytes, (byte) 7);
			this.target = host(this.bytes, (byte) 0);
		}

	}

	@State(Scope.Thread)
	public static class Raw {

		@Param({ "1048576", "268435456" })
		public int bytes;

		RawCuda cuda;

		CUstream stream;

		final CUdeviceptr device = new CUdeviceptr();

		ByteBuffer pageable;

		final Pointer pinned = new Pointer();

		@Setup(Level.Trial)
		public void open() {
			this.cuda = new RawCuda();
			this.stream = this.cuda.stream();
			RawCuda.check(JCudaDriver.cuMemAlloc(this.device, this.bytes), "cuMemAlloc");
			RawCuda.check(JCudaDriver.cuMemAllocHost(this.pinned, this.bytes), "cuMemAllocHost");
			this.pageable = host(this.bytes, (byte) 7);
		}

		@Setup(Level.Iteration)
		public void current() {
			this.cuda.makeCurrent();
		}

		@TearDown(Level.Trial)
		public void close() {
			this.cuda.makeCurrent();
			RawCuda.check(JCudaDriver.cuMemFree(this.device), "cuMemFree");
			RawCuda.check(JCudaDriver.cuMemFreeHost(this.pinned), "cuMemFreeHost");
			this.cuda.close();
		}

	}

	@Benchmark
	public void ours_upload(Ours state, Traffic traffic) {
		state.device.upload(state.source, 0, state.stream).join();
		traffic.bytes += state.bytes;
	}

	@Benchmark
	public void ours_download(Ours state, Traffic traffic) {
		state.device.download(state.target, 0, state.stream).join();
		traffic.bytes += state.bytes;
	}

	@Benchmark
	public void baseline_hostCopy(HostCopy state, Traffic traffic) {
		state.target.clear();
		state.target.put(state.source.duplicate().clear());
		traffic.bytes += state.bytes;
	}

	@Benchmark
	public void cuda_pageableUpload(Raw state, Traffic traffic) {
		RawCuda.check(JCudaDriver.cuMemcpyHtoD(state.device, Pointer.to(state.pageable), state.bytes), "cuMemcpyHtoD");
		traffic.bytes += state.bytes;
	}

	@Benchmark
	public void cuda_pageableDownload(Raw state, Traffic traffic) {
		RawCuda.check(JCudaDriver.cuMemcpyDtoH(Pointer.to(state.pageable), state.device, state.bytes), "cuMemcpyDtoH");
		traffic.bytes += state.bytes;
	}

	@Benchmark
	public void cuda_pinnedUpload(Raw state, Traffic traffic) {
		RawCuda.check(JCudaDriver.cuMemcpyHtoDAsync(state.device, state.pinned, state.bytes, state.stream), "cuMemcpyHtoDAsync");
		RawCuda.check(JCudaDriver.cuStreamSynchronize(state.stream), "cuStreamSynchronize");
		traffic.bytes += state.bytes;
	}

	@Benchmark
	public void cuda_pinnedDownload(Raw state, Traffic traffic) {
		RawCuda.check(JCudaDriver.cuMemcpyDtoHAsync(state.pinned, state.device, state.bytes, state.stream), "cuMemcpyDtoHAsync");
		RawCuda.check(JCudaDriver.cuStreamSynchronize(state.stream), "cuStreamSynchronize");
		traffic.bytes += state.bytes;
	}

}
