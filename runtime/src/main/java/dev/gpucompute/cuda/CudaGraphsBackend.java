package dev.gpucompute.cuda;

import dev.gpucompute.GpuException;
import org.jspecify.annotations.Nullable;

/**
 * What {@link CudaGraphs} needs of its {@link CudaDeviceBackend} besides the driver: entering the
 * context, the backend's failures (which keep its health up to date), and the drain's marker before a
 * stream begins or joins a capture. Stateless; thread-safe as the backend is.
 */
final class CudaGraphsBackend implements CudaGraphs.Backend {

	private final CudaDeviceBackend backend;

	private final CudaStreams streams;

	CudaGraphsBackend(CudaDeviceBackend backend, CudaStreams streams) {
		this.backend = backend;
		this.streams = streams;
	}

	@Override
	public void enter() {
		this.backend.enter();
	}

	@Override
	public void enterQuietly() {
		this.backend.enterQuietly();
	}

	@Override
	public boolean isClosed() {
		return this.backend.isClosed();
	}

	@Override
	public int coverBeforeCapture(CudaStream stream) {
		return this.streams.cover(stream);
	}

	@Override
	public GpuException failure(int code, String call, @Nullable CudaStream stream) {
		return (stream != null) ? this.backend.streamFailure(code, call, stream)
				: this.backend.failure(code, call, null, null);
	}

}
