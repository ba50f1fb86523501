package dev.gpucompute;

import java.nio.ByteBuffer;
import java.util.concurrent.atomic.AtomicLong;

import dev.gpucompute.GpuContext.MemoryInfo;
import dev.gpucompute.internal.context.ContextAssembly;
import dev.gpucompute.internal.memory.CopyFaults;
import dev.gpucompute.settings.DefaultStreamMode;
import dev.gpucompute.spi.Availability;
import dev.gpucompute.spi.BackendConfig;
import dev.gpucompute.spi.BackendProvider;
import dev.gpucompute.spi.Backends;
import dev.gpucompute.spi.DeviceBackend;
import dev.gpucompute.spi.KernelCompilation;
import dev.gpucompute.spi.LaunchArgs;
import dev.gpucompute.spi.NativeEvent;
import dev.gpucompute.spi.NativeKernel;
import dev.gpucompute.spi.NativeMemory;
import dev.gpucompute.spi.NativeStream;

/**
 * Opens contexts whose backend (the one the settings choose, CPU or CUDA) counts the staging blocks
 * (host memory for copies: page-locked on CUDA) it hands out and gets back: after a close that
 * abandoned nothing, every block was freed; after one that abandoned work the device may still copy
 * into, none is (they are left to the process). The context is built with the counting backend, as
 * any backend is: nothing of the runtime is reached into.
 */
public final class StagingCounter {

	private final AtomicLong allocated = new AtomicLong();

	private final AtomicLong freed = new AtomicLong();

	/** Opens a context of {@code builder}'s settings, on device 0, with its backend counted. */
	public GpuContext open(GpuContextBuilder builder) {
		GpuContextBuilder.Settings settings = builder.settings();
		BackendProvider chosen = Backends.select(settings.backend(), 0, settings.cpu().devices()).provider();
		return ContextAssembly.open(settings, 0, new ContextAssembly.Options(new Counting(chosen), -1, CopyFaults.NONE));
	}

	/** Staging blocks handed out and not given back. */
	public long unfreed() {
		return this.allocated.get() - this.freed.get();
	}

	/** Staging blocks handed out so far. */
	public long allocated() {
		return this.allocated.get();
	}

	private final class Counting implements BackendProvider {

		private final BackendProvider provider;

		Counting(BackendProvider provider) {
			this.provider = provider;
		}

		@Override
		public Backend backend() {
			return this.provider.backend();
		}

		@Override
		public Availability probe(int ordinal) {
			return this.provider.probe(ordinal);
		}

		@Override
		public long defaultMemoryBudget() {
			return this.provider.defaultMemoryBudget();
		}

		@Override
		public DeviceBackend open(BackendConfig config) {
			return new CountingBackend(this.provider.open(config));
		}

	}

	/** Forwards everything to the backend it wraps, counting staging blocks. */
	private final class CountingBackend implements DeviceBackend {

		private final DeviceBackend backend;

		CountingBackend(DeviceBackend backend) {
			this.backend = backend;
		}

		@Override
		public ByteBuffer allocateStaging(long bytes) {
			ByteBuffer staging = this.backend.allocateStaging(bytes);
			StagingCounter.this.allocated.incrementAndGet();
			return staging;
		}

		@Override
		public void freeStaging(ByteBuffer staging) {
			StagingCounter.this.freed.incrementAndGet();
			this.backend.freeStaging(staging);
		}

		@Override
		public DeviceInfo info() {
			return this.backend.info();
		}

		@Override
		public NativeStream createStream(StreamPriority priority, String name) {
			return this.backend.createStream(priority, name);
		}

		@Override
		public NativeStream defaultStream(DefaultStreamMode mode) {
			return this.backend.defaultStream(mode);
		}

		@Override
		public NativeEvent createEvent(boolean timing) {
			return this.backend.createEvent(timing);
		}

		@Override
		public NativeKernel loadKernel(KernelSource source) {
			return this.backend.loadKernel(source);
		}

		@Override
		public void launch(NativeKernel kernel, LaunchConfig config, LaunchArgs args, NativeStream stream) {
			this.backend.launch(kernel, config, args, stream);
		}

		@Override
		public void checkLaunchable(NativeKernel kernel) {
			this.backend.checkLaunchable(kernel);
		}

		@Override
		public NativeMemory allocate(long bytes, NativeStream stream) {
			return this.backend.allocate(bytes, stream);
		}

		@Override
		public void free(NativeMemory memory, NativeStream stream) {
			this.backend.free(memory, stream);
		}

		@Override
		public void copyToDevice(ByteBuffer src, NativeMemory dst, long dstOffset, long bytes, NativeStream stream) {
			this.backend.copyToDevice(src, dst, dstOffset, bytes, stream);
		}

		@Override
		public void copyToHost(NativeMemory src, long srcOffset, ByteBuffer dst, long bytes, NativeStream stream) {
			this.backend.copyToHost(src, srcOffset, dst, bytes, stream);
		}

		@Override
		public void copyDeviceToDevice(NativeMemory src, long srcOffset, NativeMemory dst, long dstOffset, long bytes,
				NativeStream stream) {
			this.backend.copyDeviceToDevice(src, srcOffset, dst, dstOffset, bytes, stream);
		}

		@Override
		public void copyFromPeer(DeviceBackend source, NativeMemory src, long srcOffset, NativeMemory dst,
				long dstOffset, long bytes, NativeStream stream) {
			DeviceBackend peer = (source instanceof CountingBackend counting) ? counting.backend : source;
			this.backend.copyFromPeer(peer, src, srcOffset, dst, dstOffset, bytes, stream);
		}

		@Override
		public void fill(NativeMemory dst, long offset, long bytes, byte value, NativeStream stream) {
			this.backend.fill(dst, offset, bytes, value, stream);
		}

		@Override
		public MemoryInfo memoryInfo() {
			return this.backend.memoryInfo();
		}

		@Override
		public void synchronizeDevice() {
			this.backend.synchronizeDevice();
		}

		@Override
		public boolean awaitIdle(long timeoutNanos) {
			return this.backend.awaitIdle(timeoutNanos);
		}

		@Override
		public boolean abandon(GpuException reason) {
			return this.backend.abandon(reason);
		}

		@Override
		public void completionWaitStarted() {
			this.backend.completionWaitStarted();
		}

		@Override
		public void completionWaitEnded() {
			this.backend.completionWaitEnded();
		}

		@Override
		public KernelCompilation kernelCompilation() {
			return this.backend.kernelCompilation();
		}

		@Override
		public String healthProblem() {
			return this.backend.healthProblem();
		}

		@Override
		public void close() {
			this.backend.close();
		}

	}

}
