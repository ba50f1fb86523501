package dev.gpucompute.cuda;

import static dev.gpucompute.ParamType.BUFFER;
import static dev.gpucompute.ParamType.DOUBLE;
import static dev.gpucompute.ParamType.FLOAT;
import static dev.gpucompute.ParamType.INT;
import static dev.gpucompute.ParamType.LONG;
import static dev.gpucompute.cuda.CudaTestSupport.TEST_KERNELS_PTX;
import static dev.gpucompute.cuda.CudaTestSupport.args;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.ByteBuffer;
import java.nio.FloatBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.UUID;
import java.util.stream.Stream;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

import dev.gpucompute.Dim3;
import dev.gpucompute.KernelCompilationException;
import dev.gpucompute.KernelSource;
import dev.gpucompute.LaunchConfig;
import dev.gpucompute.spi.KernelCompilation;
import dev.gpucompute.spi.NativeKernel;
import dev.gpucompute.spi.NativeMemory;

/**
 * Kernels on the CUDA backend against a real device: loading them from CUDA C, PTX and the disk
 * cache, the errors of a module that does not load, and launches that check the arguments' packing
 * and shared memory above the default limit. Skipped with the probe's reason without a device;
 * failed instead when {@code GPU_REQUIRED=1}.
 */
@Tag("gpu")
@ExtendWith(CudaTestSupport.RequiresCuda.class)
class CudaBackendKernelGpuTests extends CudaBackendGpuFixture {

	private static final String SAXPY_SOURCE = """
			extern "C" __global__ void saxpy(int n, float a, const float* x, float* y) {
			  int i = blockIdx.x * blockDim.x + threadIdx.x;
			  if (i < n) y[i] = a * x[i] + y[i];
			}
			""";

	private static final KernelSource SCALE_MIXED = KernelSource.named("scale_mixed")
		.params(LONG, DOUBLE, BUFFER, BUFFER, BUFFER)
		.cudaResource(TEST_KERNELS_PTX);

	private static final KernelSource STORE_I64 = KernelSource.named("store_i64")
		.params(LONG, BUFFER)
		.cudaResource(TEST_KERNELS_PTX);

	private static final KernelSource SHARED_REVERSE = KernelSource.named("shared_reverse")
		.params(INT, BUFFER, BUFFER)
		.cudaResource(TEST_KERNELS_PTX);

	@Test
	void saxpyOver16MFloatsFromCudaCMatchesTheCpu() {
		NativeKernel saxpy = CudaTestSupport.loadCudaC(backend,
				KernelSource.named("saxpy").params(INT, FLOAT, BUFFER, BUFFER).cuda(SAXPY_SOURCE));
		runSaxpy(saxpy, 16 << 20);
	}

	@Test
	void ptxProducedByNvccRunsSaxpy() {
		runSaxpy(backend.loadKernel(SAXPY_PTX), 1 << 20);
	}

	private void runSaxpy(NativeKernel saxpy, int n) {
		long bytes = 4L * n;
		float a = 2.5f;
		ByteBuffer hostX = backend.allocateStaging(bytes);
		ByteBuffer hostY = backend.allocateStaging(bytes);
		float[] expected = new float[n];
		try {
			FloatBuffer x = hostX.asFloatBuffer();
			FloatBuffer y = hostY.asFloatBuffer();
			for (int i = 0; i < n; i++) {
				float xi = (i % 1000) * 0.25f - 7f;
				float yi = (i % 7) + 1f;
				x.put(i, xi);
				y.put(i, yi);
				expected[i] = a * xi + yi;
			}
			NativeMemory dx = backend.allocate(bytes, this.stream);
			NativeMemory dy = backend.allocate(bytes, this.stream);
			backend.copyToDevice(hostX, dx, 0, bytes, this.stream);
			backend.copyToDevice(hostY, dy, 0, bytes, this.stream);
			backend.launch(saxpy, LaunchConfig.linear(n, 256), args(n, a, dx, dy), this.stream);
			backend.fill(dx, 0, bytes, (byte) 0, this.stream); // after the kernel, in stream order
			backend.copyToHost(dy, 0, hostY, bytes, this.stream);
			backend.free(dx, this.stream);
			backend.free(dy, this.stream);
			this.stream.synchronize();
			for (int i = 0; i < n; i++) {
				float got = y.get(i);
				// The device may fuse a*x+y into one FMA: allow an ulp or two.
				if (Math.abs(got - expected[i]) > 2 * Math.ulp(expected[i])) {
					throw new AssertionError("y[" + i + "] = " + got + ", expected " + expected[i]);
				}
			}
		}
		finally {
			backend.freeStaging(hostX);
			backend.freeStaging(hostY);
		}
	}

	@Test
	void eightByteParametersArePackedCorrectly() {
		NativeKernel scale = backend.loadKernel(SCALE_MIXED);
		int n = 1000;
		ByteBuffer host = backend.allocateStaging(8L * n);
		ByteBuffer count = backend.allocateStaging(4);
		try {
			for (int i = 0; i < n; i++) {
				host.putDouble(8 * i, i + 0.5);
			}
			NativeMemory in = backend.allocate(8L * n, this.stream);
			NativeMemory out = backend.allocate(8L * n, this.stream);
			NativeMemory counter = backend.allocate(4, this.stream);
			backend.fill(counter, 0, 4, (byte) 0, this.stream);
			backend.copyToDevice(host, in, 0, 8L * n, this.stream);
			backend.launch(scale, LaunchConfig.linear(n, 128), args((long) n, -3.0, in, out, counter), this.stream);
			backend.copyToHost(out, 0, host, 8L * n, this.stream);
			backend.copyToHost(counter, 0, count, 4, this.stream);
			backend.free(in, this.stream);
			backend.free(out, this.stream);
			backend.free(counter, this.stream);
			this.stream.synchronize();
			for (int i = 0; i < n; i++) {
				assertThat(host.getDouble(8 * i)).isEqualTo((i + 0.5) * -3.0);
			}
			assertThat(count.getInt(0)).isEqualTo(n);
		}
		finally {
			backend.freeStaging(host);
			backend.freeStaging(count);
		}
	}

	@Test
	void anIntArgumentForA64BitParameterArrivesWhole() {
		NativeKernel store = backend.loadKernel(STORE_I64);
		ByteBuffer host = backend.allocateStaging(16);
		try {
			NativeMemory out = backend.allocate(16, this.stream);
			// The first launch leaves all-ones in this thread's argument slot 0...
			backend.launch(store, ONE_THREAD, args(-1L, out), this.stream);
			// ...which a 4-byte INT must overwrite whole (sign-extended), not only its low half.
			backend.launch(store, ONE_THREAD, args(5, out), this.stream);
			backend.copyToHost(out, 0, host, 8, this.stream);
			this.stream.synchronize();
			assertThat(host.getLong(0)).isEqualTo(5L);
			backend.launch(store, ONE_THREAD, args(-5, out), this.stream);
			backend.copyToHost(out, 0, host, 8, this.stream);
			backend.free(out, this.stream);
			this.stream.synchronize();
			assertThat(host.getLong(0)).isEqualTo(-5L);
		}
		finally {
			backend.freeStaging(host);
		}
	}

	@Test
	void dynamicSharedMemoryAbove48KiBIsOptedIn() {
		int n = 24 * 1024; // 96 KiB of ints
		assertThat(backend.info().maxSharedMemoryPerBlock()).isGreaterThanOrEqualTo(n * 4);
		NativeKernel reverse = backend.loadKernel(SHARED_REVERSE);
		ByteBuffer host = backend.allocateStaging(4L * n);
		try {
			for (int i = 0; i < n; i++) {
				host.putInt(4 * i, i * 3 + 1);
			}
			NativeMemory in = backend.allocate(4L * n, this.stream);
			NativeMemory out = backend.allocate(4L * n, this.stream);
			backend.copyToDevice(host, in, 0, 4L * n, this.stream);
			backend.launch(reverse, LaunchConfig.of(Dim3.of(1), Dim3.of(256)).withSharedMemory(n * 4), args(n, in, out), this.stream);
			backend.copyToHost(out, 0, host, 4L * n, this.stream);
			backend.free(in, this.stream);
			backend.free(out, this.stream);
			this.stream.synchronize();
			for (int i = 0; i < n; i++) {
				int expected = (n - 1 - i) * 3 + 1;
				if (host.getInt(4 * i) != expected) {
					throw new AssertionError("out[" + i + "] = " + host.getInt(4 * i) + ", expected " + expected);
				}
			}
		}
		finally {
			backend.freeStaging(host);
		}
	}

	/**
	 * 32 KiB of static shared memory and 32 KiB of dynamic: 64 KiB per block, over the default 48 KiB
	 * although the dynamic part is under it, so the launch must opt in (counting the static part); a
	 * launch that leaves no room for the static part is refused before the driver, naming both.
	 */
	@Test
	void staticSharedMemoryCountsTowardsTheOptIn() {
		KernelSource kernel = KernelSource.named("static_and_dynamic_shared").params(INT, BUFFER).cuda("""
				extern "C" __global__ void static_and_dynamic_shared(int n, float* out) {
				  __shared__ float fixed[8192];
				  extern __shared__ float dynamic[];
				  for (int i = threadIdx.x; i < 8192; i += blockDim.x) fixed[i] = (float) i;
				  for (int i = threadIdx.x; i < n; i += blockDim.x) dynamic[i] = 2.0f * i;
				  __syncthreads();
				  if (threadIdx.x == 0) out[0] = fixed[8191] + dynamic[n - 1];
				}
				""");
		NativeKernel loaded = backend.loadKernel(kernel);
		int n = 8 * 1024; // 32 KiB of floats
		NativeMemory out = backend.allocate(4, this.stream);
		ByteBuffer host = backend.allocateStaging(4);
		try {
			backend.launch(loaded, LaunchConfig.of(Dim3.of(1), Dim3.of(256)).withSharedMemory(4 * n), args(n, out), this.stream);
			backend.copyToHost(out, 0, host, 4, this.stream);
			this.stream.synchronize();
			assertThat(host.getFloat(0)).isEqualTo(8191f + 2f * (n - 1));
			int perBlock = backend.info().maxSharedMemoryPerBlock();
			int tooMuch = perBlock - 32 * 1024 + 4;
			assertThatThrownBy(() -> backend.launch(loaded, LaunchConfig.of(Dim3.of(1), Dim3.of(256)).withSharedMemory(tooMuch),
					args(tooMuch / 4, out), this.stream))
				.isInstanceOf(dev.gpucompute.InvalidLaunchConfigException.class)
				.hasMessageContaining("32768 static")
				.hasMessageContaining("at most " + (perBlock - 32 * 1024) + " dynamic");
			assertThat(backend.healthProblem()).isNull();
		}
		finally {
			backend.free(out, this.stream);
			this.stream.synchronize();
			backend.freeStaging(host);
		}
	}

	@Test
	void brokenPtxFailsWithTheJitLog() {
		KernelSource broken = KernelSource.named("broken").ptx(".version 7.0\n.target sm_75\n.address_size 64\n"
				+ ".visible .entry broken() { this is not ptx; }\n");
		assertThatThrownBy(() -> backend.loadKernel(broken)).isInstanceOf(KernelCompilationException.class)
			.hasMessageContaining("cuModuleLoadDataEx")
			.satisfies((ex) -> assertThat(((KernelCompilationException) ex).compilerLog()).isNotBlank());
	}

	@Test
	void aKernelMissingFromTheModuleIsNamed() {
		KernelSource wrongName = KernelSource.named("no_such_kernel").cudaResource(TEST_KERNELS_PTX);
		assertThatThrownBy(() -> backend.loadKernel(wrongName)).isInstanceOf(KernelCompilationException.class)
			.hasMessageContaining("no kernel named 'no_such_kernel'")
			.hasMessageContaining("extern \"C\"");
	}

	@Test
	void cudaCCompileErrorsCarryTheCompilerLog() {
		KernelSource broken = KernelSource.named("broken").cuda("extern \"C\" __global__ void broken() { undeclared_thing = 1; }");
		try {
			backend.loadKernel(broken);
			throw new AssertionError("compiled");
		}
		catch (KernelCompilationException ex) {
			if (ex.getMessage().contains("no CUDA C compiler is available")) {
				org.junit.jupiter.api.Assumptions.abort(ex.getMessage());
			}
			assertThat(ex.compilerLog()).contains("undeclared_thing");
		}
	}

	/** A second backend opened with the same cache directory takes the compiled kernel from disk. */
	@Test
	void aSecondBackendHitsTheCompiledKernelCache(@TempDir Path cacheDir) throws Exception {
		// A unique source, so no earlier run's cache entry can interfere.
		String source = "// " + UUID.randomUUID() + "\n" + SAXPY_SOURCE;
		KernelSource saxpy = KernelSource.named("saxpy").params(INT, FLOAT, BUFFER, BUFFER).cuda(source);
		try (CudaDeviceBackend first = CudaTestSupport.open(cacheDir)) {
			CudaTestSupport.loadCudaC(first, saxpy);
			assertThat(first.kernelCompilation().compiled()).isEqualTo(1);
			assertThat(first.kernelCompilation().cacheHits()).isZero();
		}
		try (Stream<Path> files = Files.list(cacheDir)) {
			assertThat(files.filter((p) -> p.getFileName().toString().endsWith(".module"))).hasSize(1);
		}
		try (CudaDeviceBackend second = CudaTestSupport.open(cacheDir)) {
			NativeKernel kernel = second.loadKernel(saxpy);
			// Through the SPI, which is what the benchmarks' KernelLoadTimes reads.
			KernelCompilation compilation = second.kernelCompilation();
			assertThat(compilation.compiled()).as("nothing compiled").isZero();
			assertThat(compilation.cacheHits()).isEqualTo(1);
			assertThat(kernel.name()).isEqualTo("saxpy");
			assertThat(compilation.prebuiltLoads()).isZero();
			assertThat(compilation.cacheDir()).isEqualTo(cacheDir);
			assertThat(compilation.compiler()).isNotBlank();
		}
	}

}
