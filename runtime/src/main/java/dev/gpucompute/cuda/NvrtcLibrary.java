package dev.gpucompute.cuda;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;

import com.sun.jna.Library;
import com.sun.jna.Native;
import com.sun.jna.NativeLibrary;
import com.sun.jna.Pointer;
import com.sun.jna.StringArray;
import com.sun.jna.ptr.IntByReference;
import com.sun.jna.ptr.LongByReference;
import com.sun.jna.ptr.PointerByReference;

import dev.gpucompute.KernelCompilationException;
import org.jspecify.annotations.Nullable;

/**
 * NVRTC, CUDA's run-time compiler, bound through JNA to whichever {@code libnvrtc.so} is found
 * ({@link NvrtcLocator}): CUDA 13's {@code .so.13}, CUDA 12's, 11.2's. JCuda 12.6's own binding is
 * linked against {@code libnvrtc.so.12} and cannot use the others. NVRTC's C API has been the same
 * since CUDA 11.2 for everything used here. Instances are immutable and thread-safe: NVRTC programs
 * are independent, and NVRTC itself is thread-safe for distinct programs.
 */
final class NvrtcLibrary {

	/** {@code NVRTC_SUCCESS}. */
	private static final int SUCCESS = 0;

	/** NVRTC's C functions, as far as they are used here ({@code size_t} as {@code long}: 64-bit only). */
	interface Api extends Library {

		int nvrtcVersion(IntByReference major, IntByReference minor);

		int nvrtcGetNumSupportedArchs(IntByReference count);

		int nvrtcGetSupportedArchs(int[] archs);

		int nvrtcCreateProgram(PointerByReference program, byte[] source, byte[] name, int numHeaders,
				@Nullable Pointer headers, @Nullable Pointer includeNames);

		int nvrtcCompileProgram(Pointer program, int numOptions, @Nullable StringArray options);

		int nvrtcGetPTXSize(Pointer program, LongByReference size);

		int nvrtcGetPTX(Pointer program, byte[] ptx);

		int nvrtcGetCUBINSize(Pointer program, LongByReference size);

		int nvrtcGetCUBIN(Pointer program, byte[] cubin);

		int nvrtcGetProgramLogSize(Pointer program, LongByReference size);

		int nvrtcGetProgramLog(Pointer program, byte[] log);

		int nvrtcDestroyProgram(PointerByReference program);

		String nvrtcGetErrorString(int result);

	}

	/**
	 * What a compilation produced.
	 * @param image PTX text (without its terminating NUL) or a cubin, ready for {@code cuModuleLoadData}
	 * @param cubin whether {@code image} is a cubin (machine code) rather than PTX
	 * @param log NVRTC's messages (warnings), possibly empty
	 */
	record Output(byte[] image, boolean cubin, String log) {
	}

	private final Api api;

	private final Path file;

	private final int major;

	private final int minor;

	private final List<Integer> archs;

	private NvrtcLibrary(Api api, Path file, int major, int minor, List<Integer> archs) {
		this.api = api;
		this.file = file;
		this.major = major;
		this.minor = minor;
		this.archs = archs;
	}

	/**
	 * Loads {@code file} and asks it for its version and architectures. NVRTC finds its builtins
	 * library ({@code libnvrtc-builtins.so.*}) by name through the dynamic loader; one in the same
	 * directory is loaded first by path, which satisfies that lookup wherever the directory is.
	 * @throws UnsatisfiedLinkError when the file cannot be loaded or is not NVRTC
	 */
	static NvrtcLibrary load(Path file) {
		preloadBuiltins(file.getParent());
		Api api = Native.load(file.toAbsolutePath().toString(), Api.class,
				Map.of(Library.OPTION_STRING_ENCODING, StandardCharsets.UTF_8.name()));
		IntByReference major = new IntByReference();
		IntByReference minor = new IntByReference();
		int result = api.nvrtcVersion(major, minor);
		if (result != SUCCESS) {
			throw new UnsatisfiedLinkError(file + ": nvrtcVersion returned " + result);
		}
		List<Integer> archs = List.of();
		IntByReference count = new IntByReference();
		if (api.nvrtcGetNumSupportedArchs(count) == SUCCESS && count.getValue() > 0) {
			int[] list = new int[count.getValue()];
			if (api.nvrtcGetSupportedArchs(list) == SUCCESS) {
				TreeSet<Integer> sorted = new TreeSet<>();
				for (int arch : list) {
					sorted.add(arch);
				}
				archs = List.copyOf(sorted);
			}
		}
		return new NvrtcLibrary(api, file, major.getValue(), minor.getValue(), archs);
	}

	/**
	 * Loads the builtins libraries in {@code dir} by path, so that NVRTC's own lookup by name finds
	 * them loaded; best effort (NVRTC names a missing one itself when it compiles). Also used for
	 * JCuda's binding, whose NVRTC is loaded by path too ({@link JCudaNvrtc}).
	 */
	static void preloadBuiltins(@Nullable Path dir) {
		if (dir == null || !Files.isDirectory(dir)) {
			return;
		}
		try (var files = Files.list(dir)) {
			files.filter((path) -> path.getFileName().toString().startsWith("libnvrtc-builtins.so."))
				.filter((path) -> !path.getFileName().toString().contains(".alt."))
				.sorted()
				.forEach((path) -> {
					try {
						NativeLibrary.getInstance(path.toAbsolutePath().toString());
					}
					catch (UnsatisfiedLinkError ex) {
						// NVRTC reports a missing builtins library itself, at compile time
					}
				});
		}
		catch (java.io.IOException | RuntimeException ex) {
			// best effort
		}
	}

	/** E.g. {@code NVRTC 13.0 (/opt/venv/.../libnvrtc.so.13)}. */
	String describe() {
		return "NVRTC " + this.major + "." + this.minor + " (" + this.file + ")";
	}

	int major() {
		return this.major;
	}

	Path file() {
		return this.file;
	}

	/** The architecture numbers this NVRTC compiles for (e.g. 75, 80, ..., 120), sorted. */
	List<Integer> archs() {
		return this.archs;
	}

	/**
	 * Compiles CUDA C. With {@code cubin}, the options must name a real architecture
	 * ({@code --gpu-architecture=sm_XY}) and the result is that machine code; otherwise PTX.
	 * @throws KernelCompilationException with NVRTC's log when the source does not compile
	 */
	Output compile(String kernelName, String source, List<String> options, boolean cubin) {
		PointerByReference handle = new PointerByReference();
		int result = this.api.nvrtcCreateProgram(handle, nulTerminated(source), nulTerminated(kernelName + ".cu"), 0, null,
				null);
		if (result != SUCCESS) {
			throw new KernelCompilationException(kernelName, "nvrtcCreateProgram returned " + error(result), null, null);
		}
		Pointer program = handle.getValue();
		try {
			String[] optionArray = options.toArray(new String[0]);
			result = this.api.nvrtcCompileProgram(program, optionArray.length,
					(optionArray.length > 0) ? new StringArray(optionArray, StandardCharsets.UTF_8.name()) : null);
			String log = log(program);
			if (result != SUCCESS) {
				throw new KernelCompilationException(kernelName,
						describe() + " returned " + error(result) + " (options " + options + ")", log, null);
			}
			byte[] image = cubin ? cubin(program, kernelName, log) : ptx(program, kernelName, log);
			return new Output(image, cubin, log);
		}
		finally {
			this.api.nvrtcDestroyProgram(handle);
		}
	}

	private byte[] ptx(Pointer program, String kernelName, String log) {
		LongByReference size = new LongByReference();
		int result = this.api.nvrtcGetPTXSize(program, size);
		byte[] ptx = (result == SUCCESS) ? new byte[(int) size.getValue()] : null;
		if (ptx != null) {
			result = this.api.nvrtcGetPTX(program, ptx);
		}
		if (result != SUCCESS || ptx == null || ptx.length == 0) {
			throw new KernelCompilationException(kernelName, "nvrtcGetPTX returned " + error(result), log, null);
		}
		int end = ptx.length;
		while (end > 0 && ptx[end - 1] == 0) {
			end--;
		}
		return java.util.Arrays.copyOf(ptx, end);
	}

	private byte[] cubin(Pointer program, String kernelName, String log) {
		LongByReference size = new LongByReference();
		int result = this.api.nvrtcGetCUBINSize(program, size);
		if (result != SUCCESS || size.getValue() == 0) {
			throw new KernelCompilationException(kernelName, "nvrtcGetCUBINSize returned " + error(result) + " (size "
					+ size.getValue() + "); a cubin needs --gpu-architecture=sm_XY", log, null);
		}
		byte[] cubin = new byte[(int) size.getValue()];
		result = this.api.nvrtcGetCUBIN(program, cubin);
		if (result != SUCCESS) {
			throw new KernelCompilationException(kernelName, "nvrtcGetCUBIN returned " + error(result), log, null);
		}
		return cubin;
	}

	private String log(Pointer program) {
		LongByReference size = new LongByReference();
		if (this.api.nvrtcGetProgramLogSize(program, size) != SUCCESS || size.getValue() <= 1) {
			return "";
		}
		byte[] log = new byte[(int) size.getValue()];
		if (this.api.nvrtcGetProgramLog(program, log) != SUCCESS) {
			return "";
		}
		return CudaFormat.cString(log);
	}

	private String error(int result) {
		String text = null;
		try {
			text = this.api.nvrtcGetErrorString(result);
		}
		catch (RuntimeException | LinkageError ex) {
			// fall through
		}
		return ((text != null) ? text : "NVRTC error") + " (" + result + ")";
	}

	private static byte[] nulTerminated(String text) {
		byte[] bytes = text.getBytes(StandardCharsets.UTF_8);
		return java.util.Arrays.copyOf(bytes, bytes.length + 1);
	}

}
