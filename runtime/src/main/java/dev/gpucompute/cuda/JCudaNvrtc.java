package dev.gpucompute.cuda;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.TreeSet;

import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import dev.gpucompute.KernelCompilationException;
import jcuda.nvrtc.JNvrtc;
import jcuda.nvrtc.nvrtcProgram;
import jcuda.nvrtc.nvrtcResult;

/**
 * The JCuda NVRTC route of {@link CudaCompiler}: JCuda's NVRTC binding, loaded once per process,
 * which compiles CUDA C to PTX. Its native part is linked against {@code libnvrtc.so.12}; when that
 * library is not on the loader's path but can be found (an explicit setting, {@code CUDA_HOME},
 * {@code CUDA_PATH} or a {@code /usr/local/cuda-12*} install), it is loaded first by absolute path,
 * which satisfies the dependency, and the builtins library beside it too, which NVRTC opens by name
 * when it compiles.
 *
 * <p>Owns the process-wide outcome of that load (whether it worked, NVRTC's version and the
 * architectures it knows). Thread-safe: the load happens once, under the class's monitor, as do
 * the reads of its outcome; compilations hold no lock (each has its own NVRTC program).
 */
final class JCudaNvrtc {

	/** The category these messages had before this route left {@link CudaCompiler}; kept for log settings. */
	private static final Logger logger = LoggerFactory.getLogger(CudaCompiler.class);

	private static boolean tried;

	private static @Nullable String problem;

	private static String version = "NVRTC";

	private static List<Integer> archs = List.of();

	private JCudaNvrtc() {
	}

	/** {@code null} when NVRTC works, else why not. The first call loads the binding. */
	static synchronized @Nullable String problem() {
		if (tried) {
			return problem;
		}
		tried = true;
		preload();
		ClassLoader loader = JCudaNvrtc.class.getClassLoader();
		String jni = ExtractedLibraries.fileName(loader, "JNvrtc");
		if (jni != null) {
			String extractProblem = ExtractedLibraries.ensure(loader, Path.of(System.getProperty("java.io.tmpdir")), jni);
			if (extractProblem != null) {
				problem = extractProblem;
				return problem;
			}
		}
		try {
			JNvrtc.setExceptionsEnabled(false);
			int[] major = new int[1];
			int[] minor = new int[1];
			JNvrtc.nvrtcVersion(major, minor);
			version = "NVRTC " + major[0] + "." + minor[0];
			int[] count = new int[1];
			if (JNvrtc.nvrtcGetNumSupportedArchs(count) == nvrtcResult.NVRTC_SUCCESS && count[0] > 0) {
				int[] list = new int[count[0]];
				if (JNvrtc.nvrtcGetSupportedArchs(list) == nvrtcResult.NVRTC_SUCCESS) {
					List<Integer> values = new ArrayList<>();
					for (int arch : list) {
						values.add(arch);
					}
					archs = List.copyOf(new TreeSet<>(values));
				}
			}
			problem = null;
		}
		catch (Throwable ex) { // UnsatisfiedLinkError, NoClassDefFoundError
			problem = "JCuda's NVRTC binding needs libnvrtc.so.12, which could not be loaded ("
					+ CudaFormat.linkFailure(ex) + ")";
		}
		return problem;
	}

	/** {@code "NVRTC major.minor"} once loaded, else {@code "NVRTC"}. */
	static synchronized String version() {
		return version;
	}

	/** The architectures the loaded NVRTC supports, sorted; empty when unknown. */
	static synchronized List<Integer> archs() {
		return archs;
	}

	/**
	 * Compiles {@code source} to PTX for {@code compute_<arch>}, unless {@code options} name a target
	 * themselves. Call only when {@link #problem()} is {@code null}.
	 * @throws KernelCompilationException with NVRTC's log
	 */
	static CudaCompiler.Result compile(String kernelName, String source, List<String> options, int arch) {
		List<String> all = new ArrayList<>();
		if (!CudaCompiler.namesArch(options)) {
			all.add("--gpu-architecture=compute_" + arch);
		}
		all.addAll(options);
		String[] optionArray = all.toArray(new String[0]);
		nvrtcProgram program = new nvrtcProgram();
		int result = JNvrtc.nvrtcCreateProgram(program, source, kernelName + ".cu", 0, null, null);
		if (result != nvrtcResult.NVRTC_SUCCESS) {
			throw new KernelCompilationException(kernelName, "nvrtcCreateProgram returned " + nvrtcResult.stringFor(result),
					null, null);
		}
		try {
			result = JNvrtc.nvrtcCompileProgram(program, optionArray.length, optionArray);
			String[] log = new String[1];
			JNvrtc.nvrtcGetProgramLog(program, log);
			String logText = stripNul(log[0]);
			if (result != nvrtcResult.NVRTC_SUCCESS) {
				throw new KernelCompilationException(kernelName,
						version() + " returned " + nvrtcResult.stringFor(result) + " (options " + all + ")", logText, null);
			}
			String[] ptx = new String[1];
			result = JNvrtc.nvrtcGetPTX(program, ptx);
			if (result != nvrtcResult.NVRTC_SUCCESS || ptx[0] == null) {
				throw new KernelCompilationException(kernelName, "nvrtcGetPTX returned " + nvrtcResult.stringFor(result),
						logText, null);
			}
			return new CudaCompiler.Result(stripNul(ptx[0]).getBytes(StandardCharsets.UTF_8), version(), logText);
		}
		finally {
			JNvrtc.nvrtcDestroyProgram(program);
		}
	}

	/** {@code text} without the NUL characters NVRTC leaves at its end; {@code ""} for {@code null}. */
	static String stripNul(String text) {
		if (text == null) {
			return "";
		}
		int end = text.length();
		while (end > 0 && text.charAt(end - 1) == '\0') {
			end--;
		}
		return text.substring(0, end);
	}

	private static void preload() {
		for (Path candidate : candidates()) {
			if (Files.isRegularFile(candidate)) {
				try {
					Path absolute = candidate.toAbsolutePath();
					System.load(absolute.toString());
					// NVRTC opens its builtins library by name when it compiles: beside a library found by path
					// (not on the loader's path), only one already loaded is found.
					NvrtcLibrary.preloadBuiltins(absolute.getParent());
					logger.debug("Loaded {} for JCuda's NVRTC binding", candidate);
					return;
				}
				catch (Throwable ex) {
					logger.debug("Could not load {}: {}", candidate, ex.toString());
				}
			}
		}
	}

	private static List<Path> candidates() {
		List<Path> candidates = new ArrayList<>();
		String explicit = System.getProperty("gpu.cuda.nvrtc-library", System.getenv("GPU_NVRTC_LIBRARY"));
		if (explicit != null && !explicit.isBlank()) {
			candidates.add(Path.of(explicit));
		}
		for (String variable : List.of("CUDA_HOME", "CUDA_PATH")) {
			String home = System.getenv(variable);
			if (home != null && !home.isBlank()) {
				candidates.add(Path.of(home, "lib64", "libnvrtc.so.12"));
				candidates.add(Path.of(home, "lib", "libnvrtc.so.12"));
			}
		}
		candidates.add(Path.of("/usr/local/cuda/lib64/libnvrtc.so.12"));
		Path local = Path.of("/usr/local");
		if (Files.isDirectory(local)) {
			List<Path> installs = new ArrayList<>();
			try (DirectoryStream<Path> dirs = Files.newDirectoryStream(local, "cuda-12*")) {
				dirs.forEach(installs::add);
			}
			catch (IOException | RuntimeException ignored) {
				// none
			}
			installs.sort(Comparator.reverseOrder());
			for (Path install : installs) {
				candidates.add(install.resolve("lib64").resolve("libnvrtc.so.12"));
			}
		}
		return candidates;
	}

}
