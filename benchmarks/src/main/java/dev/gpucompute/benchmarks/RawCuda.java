package dev.gpucompute.benchmarks;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

import jcuda.driver.CUcontext;
import jcuda.driver.CUdevice;
import jcuda.driver.CUfunction;
import jcuda.driver.CUmodule;
import jcuda.driver.CUstream;
import jcuda.driver.CUstream_flags;
import jcuda.driver.JCudaDriver;

import dev.gpucompute.Backend;

/**
 * Device 0 through plain JCuda, for the raw baselines: what a Java user without this project would
 * write. Uses the primary context, as the CUDA backend does, so both share one device context.
 * Not thread-safe; each benchmark thread makes it current with {@link #makeCurrent()}.
 */
final class RawCuda implements AutoCloseable {

	private final CUdevice device = new CUdevice();

	private final CUcontext context = new CUcontext();

	private final List<CUmodule> modules = new ArrayList<>();

	private final List<CUstream> streams = new ArrayList<>();

	RawCuda() {
		Bench.requireAvailable(Backend.CUDA);
		JCudaDriver.setExceptionsEnabled(true);
		JCudaDriver.cuInit(0);
		JCudaDriver.cuDeviceGet(this.device, 0);
		JCudaDriver.cuDevicePrimaryCtxRetain(this.context, this.device);
		makeCurrent();
	}

	void makeCurrent() {
		JCudaDriver.cuCtxSetCurrent(this.context);
	}

	/** Loads {@code ptx} and returns its entry point {@code name}. */
	CUfunction function(String ptx, String name) {
		CUmodule module = new CUmodule();
		JCudaDriver.cuModuleLoadData(module, (ptx + "\0").getBytes(StandardCharsets.US_ASCII));
		this.modules.add(module);
		CUfunction function = new CUfunction();
		JCudaDriver.cuModuleGetFunction(function, module, name);
		return function;
	}

	/** A non-blocking stream, like the pooled streams of the runtime. */
	CUstream stream() {
		CUstream stream = new CUstream();
		JCudaDriver.cuStreamCreate(stream, CUstream_flags.CU_STREAM_NON_BLOCKING);
		this.streams.add(stream);
		return stream;
	}

	@Override
	public void close() {
		makeCurrent();
		JCudaDriver.cuCtxSynchronize();
		for (CUstream stream : this.streams) {
			JCudaDriver.cuStreamDestroy(stream);
		}
		for (CUmodule module : this.modules) {
			JCudaDriver.cuModuleUnload(module);
		}
		JCudaDriver.cuDevicePrimaryCtxRelease(this.device);
	}

}
