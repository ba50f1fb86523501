package dev.gpucompute.cuda;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.Assertions;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.extension.ConditionEvaluationResult;
import org.junit.jupiter.api.extension.ExecutionCondition;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.opentest4j.AssertionFailedError;

import dev.gpucompute.KernelCompilationException;
import dev.gpucompute.KernelSource;
import dev.gpucompute.ParamType;
import dev.gpucompute.spi.Availability;
import dev.gpucompute.spi.BackendConfig;
import dev.gpucompute.spi.DeviceBackend;
import dev.gpucompute.spi.LaunchArgs;
import dev.gpucompute.spi.NativeKernel;
import dev.gpucompute.spi.NativeMemory;

/**
 * Shared support for CUDA tests.
 *
 * <p>{@link #assumeCudaOrFail()} (or {@code @ExtendWith(CudaTestSupport.RequiresCuda.class)})
 * skips a test with the probe's reason when no CUDA device can be used, and fails it instead
 * when the environment variable {@code GPU_REQUIRED=1} is set (the GPU machine run, where a
 * skip would hide a broken setup).
 */
public final class CudaTestSupport {

	/** The PTX of {@code gpu/cuda/test-kernels.cu}, checked in (made by nvcc). */
	public static final String TEST_KERNELS_PTX = "gpu/cuda/test-kernels.ptx";

	private static Availability availability;

	private CudaTestSupport() {
	}

	/** The probe of device 0, once per JVM. */
	public static synchronized Availability availability() {
		if (availability == null) {
			availability = new CudaBackendProvider().probe(0);
		}
		return availability;
	}

	/** Whether {@code GPU_REQUIRED=1}: GPU tests must run, not skip. */
	public static boolean gpuRequired() {
		return "1".equals(System.getenv("GPU_REQUIRED"));
	}

	/**
	 * Returns when CUDA device 0 can be used; otherwise aborts the test (skipped, with the reason),
	 * or fails it when {@code GPU_REQUIRED=1}.
	 */
	public static void assumeCudaOrFail() {
		Availability probe = availability();
		if (probe.available()) {
			return;
		}
		if (gpuRequired()) {
			Assertions.fail("GPU_REQUIRED=1 but CUDA is unavailable: " + probe.reason());
		}
		Assumptions.abort("CUDA unavailable: " + probe.reason());
	}

	/**
	 * JUnit extension form of {@link #assumeCudaOrFail()}: every test of the class is disabled with
	 * the probe's reason (reported as skipped, per test) when CUDA is unavailable, or fails when
	 * {@code GPU_REQUIRED=1}. Class-level set-up must itself check {@link #availability()}, because
	 * the class container stays enabled.
	 */
	public static final class RequiresCuda implements ExecutionCondition {

		@Override
		public ConditionEvaluationResult evaluateExecutionCondition(ExtensionContext context) {
			if (context.getTestMethod().isEmpty()) {
				return ConditionEvaluationResult.enabled("CUDA availability is checked per test");
			}
			Availability probe = availability();
			if (probe.available()) {
				return ConditionEvaluationResult.enabled("CUDA available: " + probe.reason());
			}
			if (gpuRequired()) {
				throw new AssertionFailedError("GPU_REQUIRED=1 but CUDA is unavailable: " + probe.reason());
			}
			return ConditionEvaluationResult.disabled("CUDA unavailable: " + probe.reason());
		}

	}

	/** A backend configuration for device 0. */
	public static BackendConfig config(Path kernelCacheDir) {
		return new BackendConfig(0, 1, 0, 64L << 20, List.of(), kernelCacheDir);
	}

	/** Opens device 0 (call {@link #assumeCudaOrFail()} first). */
	public static CudaDeviceBackend open(Path kernelCacheDir) {
		return (CudaDeviceBackend) new CudaBackendProvider().open(config(kernelCacheDir));
	}

	/**
	 * Loads a CUDA C kernel; when this machine has no CUDA C compiler (no libnvrtc.so.12 and no
	 * nvcc), aborts the test with that reason, or fails it when {@code CUDA_COMPILER_REQUIRED=1}.
	 */
	public static NativeKernel loadCudaC(DeviceBackend backend, KernelSource source) {
		try {
			return backend.loadKernel(source);
		}
		catch (KernelCompilationException ex) {
			if (ex.getMessage().contains("no CUDA C compiler is available")) {
				if ("1".equals(System.getenv("CUDA_COMPILER_REQUIRED"))) {
					Assertions.fail("CUDA_COMPILER_REQUIRED=1 but: " + ex.getMessage());
				}
				Assumptions.abort("No CUDA C compiler on this machine: " + ex.getMessage());
			}
			throw ex;
		}
	}

	/** Launch arguments from values: Integer, Long, Float, Double or NativeMemory. */
	public static LaunchArgs args(Object... values) {
		return new TestArgs(values);
	}

	private static final class TestArgs implements LaunchArgs {

		private final Object[] values;

		private final ParamType[] types;

		TestArgs(Object[] values) {
			this.values = values.clone();
			List<ParamType> types = new ArrayList<>();
			for (Object value : values) {
				if (value instanceof Integer) {
					types.add(ParamType.INT);
				}
				else if (value instanceof Long) {
					types.add(ParamType.LONG);
				}
				else if (value instanceof Float) {
					types.add(ParamType.FLOAT);
				}
				else if (value instanceof Double) {
					types.add(ParamType.DOUBLE);
				}
				else if (value instanceof NativeMemory) {
					types.add(ParamType.BUFFER);
				}
				else {
					throw new IllegalArgumentException("Unsupported argument " + value);
				}
			}
			this.types = types.toArray(new ParamType[0]);
		}

		@Override
		public int count() {
			return this.values.length;
		}

		@Override
		public ParamType type(int index) {
			return this.types[index];
		}

		@Override
		public int i32(int index) {
			return (Integer) this.values[index];
		}

		@Override
		public long i64(int index) {
			return (Long) this.values[index];
		}

		@Override
		public float f32(int index) {
			return (Float) this.values[index];
		}

		@Override
		public double f64(int index) {
			return (Double) this.values[index];
		}

		@Override
		public NativeMemory memory(int index) {
			return (NativeMemory) this.values[index];
		}

	}

}
