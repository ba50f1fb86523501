package dev.gpucompute.contract;

import static dev.gpucompute.ParamType.BUFFER;
import static dev.gpucompute.ParamType.FLOAT;
import static dev.gpucompute.ParamType.INT;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.nio.IntBuffer;
import java.util.concurrent.locks.LockSupport;

import dev.gpucompute.KernelSource;

/**
 * The contract suite's kernels: CUDA (PTX compiled from contract-kernels.cu) and a Java twin of
 * each for the CPU backend, so the same tests run on every backend.
 */
public final class ContractKernels {

	private static final String PTX = "contract/contract-kernels.ptx";

	private static final VarHandle INTS = MethodHandles.byteBufferViewVarHandle(int[].class, ByteOrder.nativeOrder());

	public static final KernelSource APPEND = KernelSource.named("append").params(BUFFER, INT).cudaResource(PTX)
		.cpu((block, args) -> {
			IntBuffer log = args.ints(0);
			int p = log.get(0);
			log.put(1 + p, args.i32(1));
			log.put(0, p + 1);
		});

	public static final KernelSource RENDEZVOUS = KernelSource.named("rendezvous").params(INT, INT, BUFFER, BUFFER, INT)
		.cudaResource(PTX)
		.cpu((block, args) -> {
			int me = args.i32(0);
			int other = args.i32(1);
			ByteBuffer flags = args.bytes(2);
			INTS.setVolatile(flags, me * 4, 1);
			long end = System.nanoTime() + args.i32(4) * 1_000_000L;
			while ((int) INTS.getVolatile(flags, other * 4) == 0 && System.nanoTime() < end) {
				LockSupport.parkNanos(100_000);
			}
			args.ints(3).put(me, ((int) INTS.getVolatile(flags, other * 4) != 0) ? 1 : 0);
		});

	public static final KernelSource SLEEP_THEN_SET = KernelSource.named("sleep_then_set").params(BUFFER, INT, INT, INT)
		.cudaResource(PTX)
		.cpu((block, args) -> {
			long end = System.nanoTime() + args.i32(3) * 1_000_000L;
			while (System.nanoTime() < end) {
				LockSupport.parkNanos(1_000_000);
			}
			INTS.setVolatile(args.bytes(0), args.i32(1) * 4, args.i32(2));
		});

	public static final KernelSource COPY_CELL = KernelSource.named("copy_cell").params(BUFFER, INT, BUFFER, INT, INT)
		.cudaResource(PTX)
		.cpu((block, args) -> args.ints(2).put(args.i32(3), args.ints(0).get(args.i32(1)) * args.i32(4)));

	public static final KernelSource SUM_CELLS = KernelSource.named("sum_cells").params(INT, BUFFER, BUFFER).cudaResource(PTX)
		.cpu((block, args) -> {
			IntBuffer in = args.ints(1);
			int sum = 0;
			for (int i = 0; i < args.i32(0); i++) {
				sum += in.get(i);
			}
			args.ints(2).put(0, sum);
		});

	public static final KernelSource SAXPY = KernelSource.named("saxpy").params(INT, FLOAT, BUFFER, BUFFER).cudaResource(PTX)
		.cpu((block, args) -> {
			int n = args.i32(0);
			float a = args.f32(1);
			FloatBuffer x = args.floats(2);
			FloatBuffer y = args.floats(3);
			for (int i = (int) block.firstIndex(); i < block.endIndex(n); i++) {
				y.put(i, a * x.get(i) + y.get(i));
			}
		});

	/**
	 * saxpy for blocks of at most 32 threads ({@code __launch_bounds__(32)}): launched with larger
	 * blocks it fails, on CUDA at launch (a failure that leaves the context usable), on the CPU while
	 * it runs. The fault-injection soak's failing kernel.
	 */
	public static final KernelSource BOUNDED_SAXPY = KernelSource.named("bounded_saxpy").params(INT, FLOAT, BUFFER, BUFFER)
		.cudaResource(PTX)
		.cpu((block, args) -> {
			if (block.blockDim().volume() > 32) {
				throw new IllegalStateException("bounded_saxpy launched with " + block.blockDim().volume()
						+ " threads per block; its launch bounds allow 32");
			}
			SAXPY.cpu().run(block, args);
		});

	private ContractKernels() {
	}

}
