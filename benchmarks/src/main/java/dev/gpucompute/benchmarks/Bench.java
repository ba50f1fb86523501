package dev.gpucompute.benchmarks;

import java.nio.LongBuffer;
import java.util.List;
import java.util.Objects;
import java.util.function.UnaryOperator;

import dev.gpucompute.Backend;
import dev.gpucompute.GpuContext;
import dev.gpucompute.KernelSource;
import dev.gpucompute.ParamType;
import dev.gpucompute.spi.Availability;
import dev.gpucompute.spi.BackendConfig;
import dev.gpucompute.spi.DeviceBackend;
import dev.gpucompute.GpuContextBuilder;
import dev.gpucompute.spi.BackendSelection;
import dev.gpucompute.spi.Backends;

/**
 * What the benchmarks share: opening a context or a raw backend (skipping cleanly without a
 * device) and the kernels, whose CUDA form is PTX so that neither our launcher nor the raw JCuda
 * baselines depend on NVRTC being installed.
 */
final class Bench {

	/** Worker threads of the CPU backend and of the hand-written Java baselines: one per core. */
	static final int THREADS = Runtime.getRuntime().availableProcessors();

	/** {@code extern "C" __global__ void empty() {}} */
	static final String EMPTY_PTX = """
			.version 7.0
			.target sm_50
			.address_size 64

			.visible .entry empty()
			{
				ret;
			}
			""";

	/**
	 * <pre>{@code
	 * extern "C" __global__ void saxpy(int n, float a, const float* x, float* y) {
	 *   int i = blockIdx.x * blockDim.x + threadIdx.x;
	 *   if (i < n) y[i] = a * x[i] + y[i];
	 * }}</pre>
	 */
	static final String SAXPY_PTX = """
			.version 7.0
			.target sm_50
			.address_size 64

			.visible .entry saxpy(
				.param .u32 saxpy_n,
				.param .f32 saxpy_a,
				.param .u64 saxpy_x,
				.param .u64 saxpy_y
			)
			{
				.reg .pred %p<2>;
				.reg .b32 %r<6>;
				.reg .f32 %f<5>;
				.reg .b64 %rd<8>;

				ld.param.u32 %r1, [saxpy_n];
				ld.param.f32 %f1, [saxpy_a];
				ld.param.u64 %rd1, [saxpy_x];
				ld.param.u64 %rd2, [saxpy_y];
				mov.u32 %r2, %ctaid.x;
				mov.u32 %r3, %ntid.x;
				mov.u32 %r4, %tid.x;
				mad.lo.s32 %r5, %r2, %r3, %r4;
				setp.ge.s32 %p1, %r5, %r1;
				@%p1 bra DONE;
				cvta.to.global.u64 %rd3, %rd1;
				cvta.to.global.u64 %rd4, %rd2;
				mul.wide.s32 %rd5, %r5, 4;
				add.s64 %rd6, %rd3, %rd5;
				add.s64 %rd7, %rd4, %rd5;
				ld.global.f32 %f2, [%rd6];
				ld.global.f32 %f3, [%rd7];
				fma.rn.f32 %f4, %f1, %f2, %f3;
				st.global.f32 [%rd7], %f4;
			DONE:
				ret;
			}
			""";

	/**
	 * <pre>{@code
	 * extern "C" __global__ void spin(long long cycles, long long* out) {
	 *   long long start = clock64(), elapsed;
	 *   do { elapsed = clock64() - start; } while (elapsed < cycles);
	 *   *out = elapsed;
	 * }}</pre>
	 */
	static final String SPIN_PTX = """
			.version 7.0
			.target sm_50
			.address_size 64

			.visible .entry spin(
				.param .u64 spin_cycles,
				.param .u64 spin_out
			)
			{
				.reg .pred %p<2>;
				.reg .b64 %rd<8>;

				ld.param.u64 %rd1, [spin_cycles];
				ld.param.u64 %rd2, [spin_out];
				mov.u64 %rd3, %clock64;
			LOOP:
				mov.u64 %rd4, %clock64;
				sub.s64 %rd5, %rd4, %rd3;
				setp.lt.s64 %p1, %rd5, %rd1;
				@%p1 bra LOOP;
				cvta.to.global.u64 %rd6, %rd2;
				st.global.u64 [%rd6], %rd5;
				ret;
			}
			""";

	/** A kernel that does nothing: what a launch costs by itself. */
	static final KernelSource EMPTY = KernelSource.named("empty").ptx(EMPTY_PTX).cpu((block, args) -> {
	});

	/** {@code y = a * x + y} over {@code n} floats. */
	static final KernelSource SAXPY = KernelSource.named("saxpy")
		.params(ParamType.INT, ParamType.FLOAT, ParamType.BUFFER, ParamType.BUFFER)
		.ptx(SAXPY_PTX)
		.cpu((block, args) -> {
			int n = args.i32(0);
			float a = args.f32(1);
			java.nio.FloatBuffer x = args.floats(2);
			java.nio.FloatBuffer y = args.floats(3);
			for (int i = (int) block.firstIndex(), end = (int) block.endIndex(n); i < end; i++) {
				y.put(i, a * x.get(i) + y.get(i));
			}
		});

	/**
	 * One block that keeps one core (CPU: {@code work} rounds of xorshift) or one SM (CUDA:
	 * {@code work} clock cycles) busy, then writes a result so the work cannot be dropped.
	 */
	static final KernelSource SPIN = KernelSource.named("spin")
		.params(ParamType.LONG, ParamType.BUFFER)
		.ptx(SPIN_PTX)
		.cpu((block, args) -> {
			long rounds = args.i64(0);
			long x = 0x9E3779B97F4A7C15L + block.x();
			for (long i = 0; i < rounds; i++) {
				x ^= x << 13;
				x ^= x >>> 7;
				x ^= x << 17;
			}
			LongBuffer out = args.longs(1);
			out.put(0, x);
		});

	private Bench() {
	}

	/**
	 * Throws {@link SkippedException} unless {@code backend} can run here, so a CUDA variant on a
	 * machine without a device ends at once with the reason.
	 */
	static void requireAvailable(Backend backend) {
		BackendSelection selection = Backends.select(backend, 0);
		Availability availability = selection.availability();
		if (selection.provider() == null || !availability.available()) {
			throw new SkippedException("SKIPPED: the " + backend + " backend is not available here: "
					+ availability.reason() + ". CUDA variants run only on a machine with a CUDA device "
					+ "(benchmarks/run.sh adds them when one is found).");
		}
	}

	/** Opens a context on device 0 of {@code backend}, after {@code settings}. */
	static GpuContext open(Backend backend, UnaryOperator<GpuContextBuilder> settings) {
		requireAvailable(backend);
		return settings.apply(GpuContext.builder().backend(backend).device(0).cpuThreads(THREADS)).open();
	}

	/**
	 * Opens device 0 of {@code backend} through the SPI, below the pool and the registry: the raw
	 * backend that the baselines use.
	 */
	static DeviceBackend openRaw(Backend backend) {
		requireAvailable(backend);
		BackendConfig config = new BackendConfig(0, THREADS, Runtime.getRuntime().maxMemory(), Long.MAX_VALUE, List.of(),
				null);
		// requireAvailable found the provider.
		return Objects.requireNonNull(Backends.select(backend, 0).provider()).open(config);
	}

}
