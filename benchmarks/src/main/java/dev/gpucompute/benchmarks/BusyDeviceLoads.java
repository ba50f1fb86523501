package dev.gpucompute.benchmarks;

import java.nio.charset.StandardCharsets;
import java.util.Locale;
import java.util.Objects;

import com.sun.jna.Function;
import com.sun.jna.Memory;
import com.sun.jna.NativeLibrary;
import com.sun.jna.Pointer;
import com.sun.jna.ptr.PointerByReference;

import jcuda.driver.CUfunction;
import jcuda.driver.CUmodule;
import jcuda.driver.CUresult;
import jcuda.driver.CUstream;
import jcuda.driver.JCudaDriver;
import org.jspecify.annotations.Nullable;

/**
 * Whether loading code waits for the work in flight on the device, for
 * {@link KernelLoadTimes}: each load is timed with the device idle, then again while a 1 s kernel
 * runs on another stream, and the line says whether that kernel was still running when the load
 * returned. Three ways to load:
 * <ul>
 * <li>{@code cuModuleLoadDataEx}, what the runtime uses (a replay on an H200 returned after the 1 s
 * kernel);</li>
 * <li>{@code cuLibraryLoadData}, CUDA 12's context-independent loading, which JCuda 12.6.0 does not
 * bind ({@code CUlibrary} exists there, no function using it): called through JNA from
 * {@code libcuda.so.1};</li>
 * <li>{@code cuLibraryGetKernel} with {@code cuKernelGetFunction}, which loads a library's kernel
 * into the current context (lazily loaded libraries load there).</li>
 * </ul>
 * What it prints is what decides whether the runtime could load without waiting; nothing relies on it
 * before a GPU run has printed it.
 */
final class BusyDeviceLoads {

	/** Sleeps for its argument in nanoseconds on the device's global timer (sm_70 and later). */
	static final String SLEEP_PTX = """
			.version 7.0
			.target sm_70
			.address_size 64

			.visible .entry sleep_ns(
				.param .u64 sleep_ns_param
			)
			{
				.reg .pred %p<2>;
				.reg .b64 %rd<5>;

				ld.param.u64 %rd1, [sleep_ns_param];
				mov.u64 %rd2, %globaltimer;
				add.s64 %rd3, %rd2, %rd1;
			LOOP:
				nanosleep.u32 100000;
				mov.u64 %rd4, %globaltimer;
				setp.lt.u64 %p1, %rd4, %rd3;
				@%p1 bra LOOP;
				ret;
			}
			""";

	private static final long BUSY_NANOS = 1_000_000_000L;

	/** One way of loading {@code image}; returns a handle for {@link Load#unload}. */
	private interface Load {

		Object load(byte[] image);

		void unload(Object handle);

	}

	private BusyDeviceLoads() {
	}

	/**
	 * Prints the table.
	 * @param image code to load (a fatbin or cubin, so that no JIT compilation is timed; NUL-terminated
	 * PTX otherwise)
	 * @param kernel a kernel of {@code image}, for {@code cuLibraryGetKernel}
	 * @param what what {@code image} is, for the heading
	 */
	static void print(byte[] image, String kernel, String what) {
		try (RawCuda cuda = new RawCuda()) {
			CUfunction sleep = cuda.function(SLEEP_PTX, "sleep_ns");
			CUstream busy = cuda.stream();
			System.out.println();
			System.out.println("Loads with the device idle and while a " + BUSY_NANOS / 1_000_000 + " ms kernel runs on another "
					+ "stream (" + what + "):");
			System.out.printf(Locale.ROOT, "%-44s %10s %10s  %s%n", "call", "idle ms", "busy ms", "kernel running at return");
			row("cuModuleLoadDataEx", cuda, sleep, busy, image, new ModuleLoad());
			Library library = Library.find();
			if (library.unavailable != null) {
				System.out.printf(Locale.ROOT, "%-44s %s%n", "cuLibraryLoadData", "not measured: " + library.unavailable);
				return;
			}
			row("cuLibraryLoadData (JNA)", cuda, sleep, busy, image, library.loadOnly());
			row("cuLibraryLoadData + cuKernelGetFunction", cuda, sleep, busy, image, library.loadAndGetFunction(kernel));
		}
	}

	private static void row(String call, RawCuda cuda, CUfunction sleep, CUstream busy, byte[] image, Load load) {
		try {
			load.unload(load.load(image)); // warm-up: first-use costs of the call itself
			long t0 = System.nanoTime();
			Object idle = load.load(image);
			double idleMillis = (System.nanoTime() - t0) / 1e6;
			load.unload(idle);
			cuda.makeCurrent();
			RawCuda.check(JCudaDriver.cuLaunchKernel(sleep, 1, 1, 1, 1, 1, 1, 0, busy,
					jcuda.Pointer.to(jcuda.Pointer.to(new long[] { BUSY_NANOS })), null), "cuLaunchKernel");
			long t1 = System.nanoTime();
			Object loaded = load.load(image);
			double busyMillis = (System.nanoTime() - t1) / 1e6;
			int query = JCudaDriver.cuStreamQuery(busy);
			RawCuda.check(JCudaDriver.cuStreamSynchronize(busy), "cuStreamSynchronize");
			load.unload(loaded);
			String running = (query == CUresult.CUDA_ERROR_NOT_READY) ? "yes: it did not wait"
					: (query == CUresult.CUDA_SUCCESS) ? "no: it returned after the kernel" : CUresult.stringFor(query);
			System.out.printf(Locale.ROOT, "%-44s %10.2f %10.2f  %s%n", call, idleMillis, busyMillis, running);
		}
		catch (RuntimeException ex) {
			System.out.printf(Locale.ROOT, "%-44s failed: %s%n", call, ex.getMessage());
			// A load that failed while the kernel ran left it running: the next row's "idle" load would
			// wait for it. Its own failure, if any, is not this row's.
			try {
				cuda.makeCurrent();
				JCudaDriver.cuStreamSynchronize(busy);
			}
			catch (RuntimeException ignored) {
				// the context itself failed: the next row says so
			}
		}
	}

	/** What the runtime does. */
	private static final class ModuleLoad implements Load {

		@Override
		public Object load(byte[] image) {
			CUmodule module = new CUmodule();
			RawCuda.check(JCudaDriver.cuModuleLoadData(module, image), "cuModuleLoadData");
			return module;
		}

		@Override
		public void unload(Object handle) {
			RawCuda.check(JCudaDriver.cuModuleUnload((CUmodule) handle), "cuModuleUnload");
		}

	}

	/** The driver's library API through JNA, or why it is not there. */
	private static final class Library {

		final @Nullable Function loadData;

		final @Nullable Function getKernel;

		final @Nullable Function getFunction;

		final @Nullable Function unload;

		final @Nullable String unavailable;

		private Library(@Nullable NativeLibrary cuda, @Nullable String unavailable) {
			this.loadData = (cuda != null) ? cuda.getFunction("cuLibraryLoadData") : null;
			this.getKernel = (cuda != null) ? cuda.getFunction("cuLibraryGetKernel") : null;
			this.getFunction = (cuda != null) ? cuda.getFunction("cuKernelGetFunction") : null;
			this.unload = (cuda != null) ? cuda.getFunction("cuLibraryUnload") : null;
			this.unavailable = unavailable;
		}

		/** A function of the library API: used only when it was found ({@link #unavailable} is null). */
		static Function present(@Nullable Function function) {
			return Objects.requireNonNull(function, "the driver's library API is unavailable");
		}

		static Library find() {
			try {
				return new Library(NativeLibrary.getInstance("libcuda.so.1"), null);
			}
			catch (UnsatisfiedLinkError | RuntimeException | NoClassDefFoundError ex) {
				// An older driver without the library API, or no JNA: say which.
				return new Library(null, ex.toString());
			}
		}

		Load loadOnly() {
			return new Load() {
				@Override
				public Object load(byte[] image) {
					return loadLibrary(image);
				}

				@Override
				public void unload(Object handle) {
					check(present(Library.this.unload).invokeInt(new Object[] { handle }), "cuLibraryUnload");
				}
			};
		}

		Load loadAndGetFunction(String kernel) {
			return new Load() {
				@Override
				public Object load(byte[] image) {
					Pointer library = loadLibrary(image);
					PointerByReference cuKernel = new PointerByReference();
					check(present(Library.this.getKernel).invokeInt(new Object[] { cuKernel, library, kernel }),
							"cuLibraryGetKernel");
					PointerByReference function = new PointerByReference();
					check(present(Library.this.getFunction).invokeInt(new Object[] { function, cuKernel.getValue() }),
							"cuKernelGetFunction");
					return library;
				}

				@Override
				public void unload(Object handle) {
					check(present(Library.this.unload).invokeInt(new Object[] { handle }), "cuLibraryUnload");
				}
			};
		}

		private Pointer loadLibrary(byte[] image) {
			Memory code = new Memory(image.length + 1L);
			code.write(0, image, 0, image.length);
			code.setByte(image.length, (byte) 0);
			PointerByReference library = new PointerByReference();
			check(present(this.loadData).invokeInt(new Object[] { library, code, null, null, 0, null, null, 0 }),
					"cuLibraryLoadData");
			code.close();
			return library.getValue();
		}

		private static void check(int result, String call) {
			RawCuda.check(result, call);
		}

	}

	/** {@code text} as a NUL-terminated image, for PTX. */
	static byte[] ptxImage(String text) {
		return (text + "\0").getBytes(StandardCharsets.US_ASCII);
	}

}
