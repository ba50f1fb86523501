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
import dev.gpucompute.ElementType;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuLauncher;
import dev.gpucompute.GpuStream;
import dev.gpucompute.HostArray;
import dev.gpucompute.HostBuffer;
import dev.gpucompute.StreamLease;
import dev.gpucompute.GpuContextBuilder;

/**
 * Benchmark 6: host↔device copies of {@code bytes} bytes (1 MiB, 16 MiB, 256 MiB), waiting for each
 * copy. The {@code bytes} secondary metric counts the bytes copied (bytes per second).
 *
 * <ul>
 * <li>{@code ours_upload} / {@code ours_download}: {@link DeviceBuffer#upload(HostArray, long, GpuStream)}
 * and {@link DeviceBuffer#download(HostArray, long, GpuStream)} from and to a direct host buffer
 * ({@code HostArray.of(byteBuffer)}, made once in the setup),
 * then {@code join()}: through staging memory (page-locked on CUDA), in chunks above the chunk size.</li>
 * <li>{@code ours_uploadArray} / {@code ours_downloadArray}: the same with a {@code float[]}.</li>
 * <li>{@code ours_uploadHost} / {@code ours_downloadHost}: {@link DeviceBuffer#upload(HostBuffer, GpuStream)}
 * and {@link DeviceBuffer#download(HostBuffer, GpuStream)}: one copy straight from or into a
 * {@link HostBuffer} (page-locked on CUDA), no staging.</li>
 * <li>{@code baseline_hostCopy}: one plain {@code ByteBuffer.put} between two direct buffers of the
 * same size: what a copy between host and CPU "device" memory costs at least.</li>
 * <li>{@code cuda_pageable*} / {@code cuda_pinned*}: raw JCuda {@code cuMemcpyHtoD}/{@code DtoH} from
 * a pageable direct buffer, and {@code cuMemcpy*Async} from page-locked memory plus
 * {@code cuStreamSynchronize}: the baselines of the array and host-buffer copies.</li>
 * </ul>
 *
 * {@code copyChunk} and {@code copyThreads} set {@link GpuContextBuilder#copyChunkSize(long)} and
 * {@link GpuContextBuilder#copyThreads(int)}; {@code -1} keeps the builder's default.
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

		/** 1 MiB, 16 MiB and 256 MiB. */
		@Param({ "1048576", "16777216", "268435456" })
		public int bytes;

		@Param({ "-1" })
		public long copyChunk;

		@Param({ "-1" })
		public int copyThreads;

		GpuContext context;

		StreamLease lease;

		GpuStream stream;

		DeviceBuffer device;

		@Setup(Level.Trial)
		public void open() {
			this.context = Bench.open(this.backend, (builder) -> {
				if (this.copyChunk > 0) {
					builder.copyChunkSize(this.copyChunk);
				}
				if (this.copyThreads >= 0) {
					builder.copyThreads(this.copyThreads);
				}
				return builder;
			});
			GpuLauncher launcher = this.context.launcher();
			this.lease = this.context.streams().acquire();
			this.stream = this.lease.stream();
			this.device = launcher.callWithStream(this.stream, () -> launcher.allocate(this.bytes, ElementType.BYTE));
			prepare();
		}

		/** The host side of a kind of copy, after the device buffer exists: one round trip checks it. */
		void prepare() {
		}

		void release() {
		}

		@TearDown(Level.Trial)
		public void close() {
			release();
			this.device.close();
			this.lease.close();
			this.context.close();
		}

	}

	/** Direct buffers, as before host buffers existed. */
	@State(Scope.Thread)
	public static class Direct extends Ours {

		@SuppressWarnings("NullAway.Init") // set by prepare(), which the state's @Setup calls
		ByteBuffer source;

		@SuppressWarnings("NullAway.Init") // set by prepare(), which the state's @Setup calls
		ByteBuffer target;

		// Their regions, made once: a benchmark times the copy, not the making of a HostArray.
		@SuppressWarnings("NullAway.Init") // set by prepare(), which the state's @Setup calls
		HostArray from;

		@SuppressWarnings("NullAway.Init") // set by prepare(), which the state's @Setup calls
		HostArray into;

		@Override
		void prepare() {
			this.source = host(this.bytes, (byte) 7);
			this.target = host(this.bytes, (byte) 0);
			this.from = HostArray.of(this.source);
			this.into = HostArray.of(this.target);
			this.device.upload(this.from, 0, this.stream).join();
			this.device.download(this.into, 0, this.stream).join();
			if (this.target.get(this.bytes - 4096) != 7) {
				throw new IllegalStateException("The round trip through the device lost the data");
			}
		}

	}

	@State(Scope.Thread)
	public static class Arrays extends Ours {

		@SuppressWarnings("NullAway.Init") // set by prepare(), which the state's @Setup calls
		float[] source;

		@SuppressWarnings("NullAway.Init") // set by prepare(), which the state's @Setup calls
		float[] target;

		// Their regions, made once: a benchmark times the copy, not the making of a HostArray.
		@SuppressWarnings("NullAway.Init") // set by prepare(), which the state's @Setup calls
		HostArray from;

		@SuppressWarnings("NullAway.Init") // set by prepare(), which the state's @Setup calls
		HostArray into;

		@Override
		void prepare() {
			this.source = new float[this.bytes / Float.BYTES];
			java.util.Arrays.fill(this.source, 7f);
			this.target = new float[this.bytes / Float.BYTES];
			this.from = HostArray.of(this.source);
			this.into = HostArray.of(this.target);
			this.device.upload(this.from, this.stream).join();
			this.device.download(this.into, this.stream).join();
			if (this.target[this.target.length - 1] != 7f) {
				throw new IllegalStateException("The round trip through the device lost the data");
			}
		}

	}

	@State(Scope.Thread)
	public static class Hosts extends Ours {

		@SuppressWarnings("NullAway.Init") // set by prepare(), which the state's @Setup calls
		HostBuffer source;

		@SuppressWarnings("NullAway.Init") // set by prepare(), which the state's @Setup calls
		HostBuffer target;

		@Override
		void prepare() {
			this.source = this.context.launcher().allocateHost(this.bytes);
			this.target = this.context.launcher().allocateHost(this.bytes);
			ByteBuffer view = this.source.asByteBuffer();
			for (int i = 0; i < this.bytes; i += 4096) {
				view.put(i, (byte) 7);
			}
			this.device.upload(this.source, this.stream).join();
			this.device.download(this.target, this.stream).join();
			if (this.target.asByteBuffer().get(this.bytes - 4096) != 7) {
				throw new IllegalStateException("The round trip through the device lost the data");
			}
		}

		@Override
		void release() {
			this.source.close();
			this.target.close();
		}

	}

	@State(Scope.Thread)
	public static class HostCopy {

		@Param({ "1048576", "16777216", "268435456" })
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

		@Param({ "1048576", "16777216", "268435456" })
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
	public void ours_upload(Direct state, Traffic traffic) {
		state.device.upload(state.from, 0, state.stream).join();
		traffic.bytes += state.bytes;
	}

	@Benchmark
	public void ours_download(Direct state, Traffic traffic) {
		state.device.download(state.into, 0, state.stream).join();
		traffic.bytes += state.bytes;
	}

	@Benchmark
	public void ours_uploadArray(Arrays state, Traffic traffic) {
		state.device.upload(state.from, state.stream).join();
		traffic.bytes += state.bytes;
	}

	@Benchmark
	public void ours_downloadArray(Arrays state, Traffic traffic) {
		state.device.download(state.into, state.stream).join();
		traffic.bytes += state.bytes;
	}

	@Benchmark
	public void ours_uploadHost(Hosts state, Traffic traffic) {
		state.device.upload(state.source, state.stream).join();
		traffic.bytes += state.bytes;
	}

	@Benchmark
	public void ours_downloadHost(Hosts state, Traffic traffic) {
		state.device.download(state.target, state.stream).join();
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
