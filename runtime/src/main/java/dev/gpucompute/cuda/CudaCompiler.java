package dev.gpucompute.cuda;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import dev.gpucompute.KernelCompilationException;

/**
 * Compiles CUDA C to a module image, by the first route that works here:
 * <ol>
 * <li>NVRTC of any CUDA version through JNA ({@link NvrtcLibrary}, found by {@link NvrtcLocator}):
 * CUDA 13's {@code libnvrtc.so.13} from a toolkit or from the {@code nvidia-cuda-nvrtc} pip wheel,
 * CUDA 12's, 11.2's. It gives machine code (a cubin) for the device's architecture when that NVRTC
 * knows it, else PTX for the newest architecture it knows, which the driver compiles. An NVRTC
 * whose major version is not newer than the driver's is preferred: newer code may not load.</li>
 * <li>JCuda's NVRTC binding, which gives PTX; it is linked against {@code libnvrtc.so.12}.</li>
 * <li>{@code nvcc}, when a working one is on {@code PATH}, under {@code CUDA_HOME}, {@code CUDA_PATH}
 * or in {@code /usr/local/cuda/bin}. It makes a fatbin with the device's machine code and its PTX:
 * PTX alone would need a driver at least as new as that nvcc, machine code only the same major
 * CUDA version. It needs a host compiler and takes a second or more per kernel.</li>
 * </ol>
 * Without any of them, compilation fails with a message naming what was looked for and the
 * ahead-of-time alternative (PTX or a fatbin shipped beside the {@code .cu}).
 *
 * <p>This class owns the choice of route, the JNA route (its loaded libraries, one per file) and the
 * target architecture; the JCuda route is {@link JCudaNvrtc} and the nvcc route {@link NvccCompiler}.
 * Thread-safe; nothing here holds a lock while compiling (only while a route is first resolved).
 */
final class CudaCompiler {

	private static final Logger logger = LoggerFactory.getLogger(CudaCompiler.class);

	private static volatile @Nullable CudaCompiler system;

	/** Finds NVRTC libraries for the JNA route, or {@code null} when that route is off. */
	private final @Nullable NvrtcLocator locator;

	/** Loaded NVRTC libraries (or why not) by file, so each is loaded once. */
	private final Map<Path, Object> nvrtcLibraries = new ConcurrentHashMap<>();

	private final boolean useNvrtc;

	/** The last route. */
	private final NvccCompiler nvcc;

	/**
	 * @param locator where to look for NVRTC libraries for the JNA route, or {@code null} for no such route
	 * @param useNvrtc whether to try JCuda's NVRTC binding
	 * @param nvcc the nvcc route
	 */
	CudaCompiler(@Nullable NvrtcLocator locator, boolean useNvrtc, NvccCompiler nvcc) {
		this.locator = locator;
		this.useNvrtc = useNvrtc;
		this.nvcc = nvcc;
	}

	/**
	 * @param locator where to look for NVRTC libraries for the JNA route, or {@code null} for no such route
	 * @param useNvrtc whether to try JCuda's NVRTC binding
	 * @param nvccCandidates where to look for {@code nvcc}, in order
	 */
	CudaCompiler(@Nullable NvrtcLocator locator, boolean useNvrtc, List<Path> nvccCandidates) {
		this(locator, useNvrtc, new NvccCompiler(nvccCandidates));
	}

	/** A compiler without the JNA route (tests of the other routes). */
	CudaCompiler(boolean useNvrtc, List<Path> nvccCandidates) {
		this(null, useNvrtc, nvccCandidates);
	}

	/** The compiler for this machine: NVRTC through JNA, JCuda's NVRTC, then {@code nvcc} from the usual places. */
	static CudaCompiler system() {
		CudaCompiler compiler = system;
		if (compiler == null) {
			synchronized (CudaCompiler.class) {
				compiler = system;
				if (compiler == null) {
					compiler = new CudaCompiler(NvrtcLocator.system(), true, NvccCompiler.defaultCandidates());
					system = compiler;
				}
			}
		}
		return compiler;
	}

	/** The {@code nvcc} the last route uses ({@link NvccCompiler#path()}), or {@code null}. */
	@Nullable Path nvcc() {
		return this.nvcc.path();
	}

	/**
	 * The outcome of a compilation.
	 * @param image what {@code cuModuleLoadData} takes: PTX text (NVRTC) or a fatbin (nvcc)
	 * @param compiler which compiler made it, for logs
	 * @param log the compiler's messages (warnings), possibly empty
	 */
	record Result(byte[] image, String compiler, String log) {
	}

	/** A short description of what will compile CUDA C here, for logs. */
	String describe() {
		JnaChoice jna = jnaNvrtc(0);
		if (jna.library() != null) {
			return jna.library().describe() + " through JNA";
		}
		String nvrtcProblem = this.useNvrtc ? JCudaNvrtc.problem() : "NVRTC disabled";
		if (nvrtcProblem == null) {
			return JCudaNvrtc.version() + " through JCuda";
		}
		Path nvccPath = this.nvcc.path();
		if (nvccPath != null) {
			return "nvcc (" + nvccPath + "; " + jna.problem() + "; " + nvrtcProblem + ")";
		}
		String nvccProblem = this.nvcc.problem();
		return "none (" + jna.problem() + "; " + nvrtcProblem + ((nvccProblem != null) ? "; " + nvccProblem : "") + ")";
	}

	/**
	 * Compiles {@code source} for a device of compute capability {@code major.minor}. The target is
	 * the device's architecture, lowered to the newest one the compiler supports when the compiler is
	 * older than the device, unless {@code options} name one.
	 * @param driverVersion the driver's {@code cuDriverGetVersion} (e.g. 13000), or 0 when unknown
	 * @throws KernelCompilationException with the compiler's log
	 */
	Result compile(String kernelName, String source, List<String> options, int major, int minor, int driverVersion) {
		int wanted = major * 10 + minor;
		JnaChoice jna = jnaNvrtc(driverVersion / 1000);
		if (jna.library() != null) {
			return compileWithJnaNvrtc(jna.library(), kernelName, source, options, wanted);
		}
		String nvrtcProblem = this.useNvrtc ? JCudaNvrtc.problem() : "JCuda's NVRTC binding is disabled";
		if (nvrtcProblem == null) {
			return JCudaNvrtc.compile(kernelName, source, options, clampArch(wanted, JCudaNvrtc.archs()));
		}
		Path nvccPath = this.nvcc.path();
		if (nvccPath != null) {
			logger.debug("Compiling kernel '{}' with {} ({}; {})", kernelName, nvccPath, jna.problem(), nvrtcProblem);
			return this.nvcc.compile(nvccPath, kernelName, source, options, clampArch(wanted, this.nvcc.archs(nvccPath)));
		}
		throw new KernelCompilationException(kernelName, noCompilerMessage(jna.problem() + "; " + nvrtcProblem,
				this.nvcc.problem(), wanted), null, null);
	}

	/** {@link #compile(String, String, List, int, int, int)} with the driver version unknown. */
	Result compile(String kernelName, String source, List<String> options, int major, int minor) {
		return compile(kernelName, source, options, major, minor, 0);
	}

	/** The message when neither NVRTC nor nvcc can be used. */
	static String noCompilerMessage(String nvrtcProblem, @Nullable String nvccProblem, int arch) {
		String nvcc = (nvccProblem != null) ? nvccProblem
				: "no nvcc was found on PATH, under CUDA_HOME or CUDA_PATH, or in /usr/local/cuda/bin";
		return "no CUDA C compiler is available here. " + nvrtcProblem + "; and " + nvcc + ". Ship the kernel compiled "
				+ "ahead of time instead: a <name>.fatbin or <name>.ptx beside <name>.cu is loaded in its place (the "
				+ "cuda-aot Maven profile makes fatbins with nvcc at build time), or compile it once with `nvcc -ptx "
				+ "-arch=compute_" + arch + " kernel.cu` and load the .ptx (KernelSource.ptx(...)); or install NVRTC "
				+ "(CUDA 13's libnvrtc.so.13 from the toolkit or `pip install nvidia-cuda-nvrtc`, found under CUDA_HOME, "
				+ "LD_LIBRARY_PATH, /usr/local/cuda*/lib64 or Python's site-packages; or name it with "
				+ "-Dgpu.cuda.nvrtc-library=/path/to/libnvrtc.so.N)";
	}

	/**
	 * The JNA route's library, or why there is none.
	 * @param library the loaded NVRTC, or {@code null}
	 * @param problem why there is none, or {@code null}
	 */
	record JnaChoice(@Nullable NvrtcLibrary library, @Nullable String problem) {
	}

	/**
	 * The NVRTC library to use through JNA: among the candidates that load, the first whose major
	 * version is not above {@code driverMajor} (0: any), else the first that loads. Each file is
	 * loaded at most once per compiler; loading takes milliseconds, and no lock is held meanwhile
	 * (two threads may race to load the same file, which the dynamic loader shares).
	 */
	JnaChoice jnaNvrtc(int driverMajor) {
		if (this.locator == null) {
			return new JnaChoice(null, "NVRTC through JNA is disabled");
		}
		List<Path> candidates = this.locator.candidates();
		if (candidates.isEmpty()) {
			return new JnaChoice(null, "no NVRTC library (libnvrtc.so.N) was found under CUDA_HOME, CUDA_PATH, "
					+ "LD_LIBRARY_PATH, /usr/local/cuda*/lib64, /usr/lib or Python's site-packages/nvidia/*/lib");
		}
		NvrtcLibrary fallback = null;
		List<String> problems = new ArrayList<>();
		for (Path candidate : candidates) {
			Object loaded = this.nvrtcLibraries.computeIfAbsent(candidate, CudaCompiler::loadNvrtc);
			if (loaded instanceof NvrtcLibrary library) {
				if (driverMajor <= 0 || library.major() <= driverMajor) {
					return new JnaChoice(library, null);
				}
				if (fallback == null) {
					fallback = library;
				}
			}
			else {
				problems.add(candidate + ": " + loaded);
			}
		}
		if (fallback != null) {
			return new JnaChoice(fallback, null);
		}
		return new JnaChoice(null, "no NVRTC library could be loaded through JNA (" + String.join("; ", problems) + ")");
	}

	/** An {@link NvrtcLibrary}, or the reason it could not be loaded (a String). */
	private static Object loadNvrtc(Path file) {
		try {
			NvrtcLibrary library = NvrtcLibrary.load(file);
			logger.debug("Loaded {}", library.describe());
			return library;
		}
		catch (NoClassDefFoundError ex) {
			return "JNA (net.java.dev.jna:jna) is not on the class path";
		}
		catch (Throwable ex) { // UnsatisfiedLinkError and friends
			return CudaFormat.linkFailure(ex);
		}
	}

	private Result compileWithJnaNvrtc(NvrtcLibrary nvrtc, String kernelName, String source, List<String> options,
			int wanted) {
		List<String> all = new ArrayList<>();
		boolean cubin;
		String target;
		if (namesArch(options)) {
			cubin = options.stream().anyMatch((option) -> option.contains("sm_"));
			target = "as the options say";
		}
		else {
			int arch = clampArch(wanted, nvrtc.archs());
			// Machine code for the device itself: no JIT at load, and no PTX newer than the driver.
			// For a device newer than this NVRTC, PTX of the newest architecture it knows, for the driver to JIT.
			cubin = arch == wanted && nvrtc.archs().contains(wanted);
			target = (cubin ? "sm_" : "compute_") + arch;
			all.add("--gpu-architecture=" + target);
		}
		all.addAll(options);
		NvrtcLibrary.Output output = nvrtc.compile(kernelName, source, all, cubin);
		return new Result(output.image(), nvrtc.describe() + " through JNA, " + (cubin ? "cubin " : "PTX ") + target,
				output.log());
	}

	/**
	 * The architecture to compile for: {@code wanted} when the compiler supports it (or its list
	 * is unknown), else the newest supported one below it; {@code wanted} when all are newer (the
	 * compiler then reports the problem itself).
	 */
	static int clampArch(int wanted, Collection<Integer> supported) {
		if (supported == null || supported.isEmpty() || supported.contains(wanted)) {
			return wanted;
		}
		int best = -1;
		for (int arch : supported) {
			if (arch <= wanted && arch > best) {
				best = arch;
			}
		}
		return (best > 0) ? best : wanted;
	}

	/** Whether the options already choose a target architecture. */
	static boolean namesArch(List<String> options) {
		for (String option : options) {
			if (option.startsWith("-arch") || option.startsWith("--gpu-architecture") || option.startsWith("-gencode")
					|| option.startsWith("--generate-code") || option.startsWith("-code") || option.startsWith("--gpu-code")) {
				return true;
			}
		}
		return false;
	}

}
