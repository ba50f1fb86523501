package dev.gpucompute.benchmarks;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

import jcuda.driver.CUcontext;
import jcuda.driver.CUdevice;
import jcuda.driver.CUfunction;
import jcuda.driver.CUmodule;
import jcuda.driver.CUresult;
import jcuda.driver.CUstream;
import jcuda.driver.CUstream_flags;
import jcuda.driver.JCudaDriver;

import dev.gpucompute.Backend;

/**
 * Device 0 through plain JCuda, for the raw baselines: what a Java user without this project would
 * write. Uses the primary context, as the CUDA backend does, so both share one device context.
 * Not thread-safe; each benchmark thread makes it current with {@link #makeCurrent()}.
 *
 * <p>Every driver call's result goes through {@link #check}. JCuda's exceptions stay off:
 * {@code JCudaDriver.setExceptionsEnabled(true)} is one switch for the whole JVM, and the CUDA backend,
 * measured in the same JVM, reads result codes ("not ready" is an answer, not a failure) and is not
 * supported with it on. Checking a result costs what JCuda's own check would.
 */
final class RawCuda implements AutoCloseable {

	private final CUdevice device = new CUdevice();

	private final CUcontext context = new CUcontext();

	private final List<CUmodule> modules = new ArrayList<>();

	private final List<CUstream> streams = new ArrayList<>();

	RawCuda() {
		Bench.requireAvailable(Backend.CUDA);
		check(JCudaDriver.cuInit(0), "cuInit");
		check(JCudaDriver.cuDeviceGet(this.device, 0), "cuDeviceGet");
		check(JCudaDriver.cuDevicePrimaryCtxRetain(this.context, this.device), "cuDevicePrimaryCtxRetain");
		makeCurrent();
	}

	/**
	 * Fails a baseline whose driver call failed, naming the call and the {@code CUresult}.
	 * @throws IllegalStateException unless {@code result} is {@code CUDA_SUCCESS}
	 */
	static void check(int result, String call) {
		if (result != CUresult.CUDA_SUCCESS) {
			throw new IllegalStateException(call + " returned " + CUresult.stringFor(result));
		}
	}

	void makeCurrent() {
		check(JCudaDriver.cuCtxSetCurrent(this.context), "cuCtxSetCurrent");
	}

	/** Loads {@code ptx} and returns its entry point {@code name}. */
	CUfunction function(String ptx, String name) {
		CUmodule module = new CUmodule();
		check(JCudaDriver.cuModuleLoadData(module, (ptx + "\0").getBytes(StandardCharsets.US_ASCII)), "cuModuleLoadData");
		this.modules.add(module);
		CUfunction function = new CUfunction();
		check(JCudaDriver.cuModuleGetFunction(function, module, name), "cuModuleGetFunction");
		return function;
	}

	/** A non-blocking stream, like the pooled streams of the runtime. */
	CUstream stream() {
		CUstream stream = new CUstream();
		check(JCudaDriver.cuStreamCreate(stream, CUstream_flags.CU_STREAM_NON_BLOCKING), "cuStreamCreate");
		this.streams.add(stream);
		return stream;
	}

	@Override
	public void close() {
		makeCurrent();
		check(JCudaDriver.cuCtxSynchronize(), "cuCtxSynchronize");
		for (CUstream stream : this.streams) {
			check(JCudaDriver.cuStreamDestroy(stream), "cuStreamDestroy");
		}
		for (CUmodule module : this.modules) {
			check(JCudaDriver.cuModuleUnload(module), "cuModuleUnload");
		}
		check(JCudaDriver.cuDevicePrimaryCtxRelease(this.device), "cuDevicePrimaryCtxRelease");
	}

}
