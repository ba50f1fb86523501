package dev.gpucompute.autoconfigure.cuda;

import org.springframework.boot.health.contributor.Health;

import dev.gpucompute.Backend;
import dev.gpucompute.DeviceBuffer;
import dev.gpucompute.Dim3;
import dev.gpucompute.ElementType;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuException;
import dev.gpucompute.KernelSource;
import dev.gpucompute.LaunchConfig;
import dev.gpucompute.ParamType;
import dev.gpucompute.StreamLease;
import dev.gpucompute.autoconfigure.actuate.GpuHealthIndicator;

/**
 * Run in a child JVM by {@link GpuStarterCudaGpuTests}: the health indicator of a CUDA context
 * before and after an out-of-bounds write (a sticky error that poisons the process's context),
 * printed as {@code KEY=value} lines.
 */
public final class StickyHealthProbe {

	/** {@code p[elementOffset] = 42} from thread 0 (test-kernels.cu's write_out_of_bounds). */
	static final String OOB_PTX = """
			.version 7.8
			.target sm_75
			.address_size 64

			.visible .entry write_out_of_bounds(
				.param .u64 write_out_of_bounds_param_0,
				.param .u64 write_out_of_bounds_param_1
			)
			{
				.reg .pred %p<2>;
				.reg .b32 %r<5>;
				.reg .b64 %rd<6>;

				ld.param.u64 %rd1, [write_out_of_bounds_param_0];
				ld.param.u64 %rd2, [write_out_of_bounds_param_1];
				mov.u32 %r1, %ctaid.x;
				mov.u32 %r2, %tid.x;
				or.b32 %r3, %r1, %r2;
				setp.ne.s32 %p1, %r3, 0;
				@%p1 bra DONE;
				cvta.to.global.u64 %rd3, %rd1;
				shl.b64 %rd4, %rd2, 2;
				add.s64 %rd5, %rd3, %rd4;
				mov.u32 %r4, 42;
				st.global.u32 [%rd5], %r4;
			DONE:
				ret;
			}
			""";

	private StickyHealthProbe() {
	}

	public static void main(String[] args) {
		try (GpuContext context = GpuContext.builder().backend(Backend.CUDA).poolSize(1).open()) {
			GpuHealthIndicator health = new GpuHealthIndicator(context);
			System.out.println("BEFORE=" + health.health().getStatus());
			KernelSource oob = KernelSource.named("write_out_of_bounds").params(ParamType.BUFFER, ParamType.LONG).ptx(OOB_PTX);
			try (StreamLease lease = context.streams().acquire(); DeviceBuffer buffer = context.launcher().allocate(256, ElementType.BYTE)) {
				context.launcher()
					.launch(lease.stream(), context.launcher().load(oob), LaunchConfig.of(Dim3.of(1), Dim3.of(1)), buffer,
							1L << 38);
				lease.stream().synchronize();
				System.out.println("SYNC=no failure");
			}
			catch (GpuException ex) {
				System.out.println("SYNC=" + ex.getClass().getSimpleName());
			}
			Health after = health.health();
			System.out.println("AFTER=" + after.getStatus());
			System.out.println("REASON=" + String.valueOf(after.getDetails().get("reason")).replace('\n', ' '));
		}
		catch (Throwable ex) {
			System.out.println("UNEXPECTED=" + ex);
			ex.printStackTrace(System.out);
		}
		System.out.flush();
		System.exit(0);
	}

}
