package dev.gpucompute.cuda;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import dev.gpucompute.KernelCompilationException;
import jcuda.nvrtc.JNvrtc;
import jcuda.nvrtc.nvrtcProgram;
import jcuda.nvrtc.nvrtcResult;

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
 * ahead-of-time alternative (PTX or a fatbin shipped beside the {@code .cu}). Thread-safe; nothing
 * here holds a lock while compiling (only while a route is first resolved).
 */
final class CudaCompiler {

	private static final Logger logger = LoggerFactory.getLogger(CudaCompiler.class);

	/** Longest an {@code nvcc} run may take. */
	private static final long NVCC_TIMEOUT_SECONDS = 300;

	private static final Pattern COMPUTE_ARCH = Pattern.compile("compute_(\\d+)");

	private static volatile CudaCompiler system;

	/** Finds NVRTC libraries for the JNA route, or {@code null} when that route is off. */
	private final NvrtcLocator locator;

	/** Loaded NVRTC libraries (or why not) by file, so each is loaded once. */
	private final java.util.Map<Path, Object> nvrtcLibraries = new java.util.concurrent.ConcurrentHashMap<>();

	private final boolean useNvrtc;

	private final List<Path> nvccCandidates;

	private volatile Path nvcc;

	private volatile boolean nvccResolved;

	/** Why the nvcc candidates found were not usable; {@code null} when one is, or none was found. */
	private volatile String nvccProblem;

	private volatile List<Integer> nvccArchs;

	/**
	 * @param locator where to look for NVRTC libraries for the JNA route, or {@code null} for no such route
	 * @param useNvrtc whether to try JCuda's NVRTC binding
	 * @param nvccCandidates where to look for {@code nvcc}, in order
	 */
	CudaCompiler(NvrtcLocator locator, boolean useNvrtc, List<Path> nvccCandidates) {
		this.locator = locator;
		this.useNvrtc = useNvrtc;
		this.nvccCandidates = List.copyOf(nvccCandidates);
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
					compiler = new CudaCompiler(NvrtcLocator.system(), true, defaultNvccCandidates());
					system = compiler;
				}
			}
		}
		return compiler;
	}

	/** {@code nvcc} on {@code PATH}, then under {@code CUDA_HOME}, {@code CUDA_PATH} and {@code /usr/local/cuda}. */
	static List<Path> defaultNvccCandidates() {
		Set<Path> candidates = new LinkedHashSet<>();
		String path = System.getenv("PATH");
		if (path != null) {
			for (String entry : path.split(File.pathSeparator)) {
				if (!entry.isBlank()) {
					candidates.add(Path.of(entry, "nvcc"));
				}
			}
		}
		for (String variable : List.of("CUDA_HOME", "CUDA_PATH")) {
			String home = System.getenv(variable);
			if (home != null && !home.isBlank()) {
				candidates.add(Path.of(home, "bin", "nvcc"));
			}
		}
		candidates.add(Path.of("/usr/local/cuda/bin/nvcc"));
		return new ArrayList<>(candidates);
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
		String nvrtcProblem = this.useNvrtc ? Nvrtc.problem() : "NVRTC disabled";
		if (nvrtcProblem == null) {
			return Nvrtc.version() + " through JCuda";
		}
		Path nvccPath = nvcc();
		if (nvccPath != null) {
			return "nvcc (" + nvccPath + "; " + jna.problem() + "; " + nvrtcProblem + ")";
		}
		return "none (" + jna.problem() + "; " + nvrtcProblem + ((this.nvccProblem != null) ? "; " + this.nvccProblem : "") + ")";
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
		String nvrtcProblem = this.useNvrtc ? Nvrtc.problem() : "JCuda's NVRTC binding is disabled";
		if (nvrtcProblem == null) {
			return compileWithNvrtc(kernelName, source, options, clampArch(wanted, Nvrtc.archs()));
		}
		Path nvccPath = nvcc();
		if (nvccPath != null) {
			logger.debug("Compiling kernel '{}' with {} ({}; {})", kernelName, nvccPath, jna.problem(), nvrtcProblem);
			return compileWithNvcc(nvccPath, kernelName, source, options, clampArch(wanted, nvccArchs(nvccPath)));
		}
		throw new KernelCompilationException(kernelName, noCompilerMessage(jna.problem() + "; " + nvrtcProblem,
				this.nvccProblem, wanted), null, null);
	}

	/** {@link #compile(String, String, List, int, int, int)} with the driver version unknown. */
	Result compile(String kernelName, String source, List<String> options, int major, int minor) {
		return compile(kernelName, source, options, major, minor, 0);
	}

	/** The message when neither NVRTC nor nvcc can be used. */
	static String noCompilerMessage(String nvrtcProblem, String nvccProblem, int arch) {
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
	record JnaChoice(NvrtcLibrary library, String problem) {
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

	private Result compileWithNvrtc(String kernelName, String source, List<String> options, int arch) {
		List<String> all = new ArrayList<>();
		if (!namesArch(options)) {
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
						Nvrtc.version() + " returned " + nvrtcResult.stringFor(result) + " (options " + all + ")", logText, null);
			}
			String[] ptx = new String[1];
			result = JNvrtc.nvrtcGetPTX(program, ptx);
			if (result != nvrtcResult.NVRTC_SUCCESS || ptx[0] == null) {
				throw new KernelCompilationException(kernelName, "nvrtcGetPTX returned " + nvrtcResult.stringFor(result),
						logText, null);
			}
			return new Result(stripNul(ptx[0]).getBytes(StandardCharsets.UTF_8), Nvrtc.version(), logText);
		}
		finally {
			JNvrtc.nvrtcDestroyProgram(program);
		}
	}

	private Result compileWithNvcc(Path nvccPath, String kernelName, String source, List<String> options, int arch) {
		Path dir = null;
		try {
			dir = Files.createTempDirectory("gpu-compute-nvcc-");
			Path cu = dir.resolve(kernelName + ".cu");
			Path image = dir.resolve(kernelName + ".fatbin");
			Files.writeString(cu, source, StandardCharsets.UTF_8);
			List<String> command = new ArrayList<>();
			command.add(nvccPath.toString());
			command.add("-fatbin");
			if (!namesArch(options)) {
				command.add(gencode(arch));
			}
			command.addAll(options);
			command.add("-o");
			command.add(image.toString());
			command.add(cu.toString());
			NvccRun run = runNvcc(command, dir, NVCC_TIMEOUT_SECONDS);
			if (run.exitValue() == null) {
				throw new KernelCompilationException(kernelName, "nvcc did not finish within " + NVCC_TIMEOUT_SECONDS + " s",
						run.output(), null);
			}
			if (run.exitValue() != 0 || !Files.isRegularFile(image)) {
				throw new KernelCompilationException(kernelName,
						"nvcc exited with status " + run.exitValue() + " (" + String.join(" ", command) + ")", run.output(), null);
			}
			return new Result(Files.readAllBytes(image), "nvcc (" + nvccPath + ")", run.output());
		}
		catch (IOException ex) {
			throw new KernelCompilationException(kernelName, "nvcc at " + nvccPath + " could not be run: " + ex, null, ex);
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			throw new KernelCompilationException(kernelName, "interrupted while nvcc was compiling", null, ex);
		}
		finally {
			deleteQuietly(dir);
		}
	}

	/** Machine code and PTX for {@code compute_XY}, so that a driver older than nvcc can still load it. */
	static String gencode(int arch) {
		return "-gencode=arch=compute_" + arch + ",code=[sm_" + arch + ",compute_" + arch + "]";
	}

	/**
	 * The first {@code nvcc} among the candidates that compiles a trivial kernel, or {@code null}.
	 * An nvcc that is present but cannot work (no host compiler, an unsupported gcc) is passed over
	 * with its reason kept for the error message, instead of failing every kernel later.
	 */
	Path nvcc() {
		if (!this.nvccResolved) {
			synchronized (this) {
				if (!this.nvccResolved) {
					List<String> problems = new ArrayList<>();
					for (Path candidate : this.nvccCandidates) {
						if (!Files.isExecutable(candidate)) {
							continue;
						}
						String problem = trialCompile(candidate);
						if (problem == null) {
							this.nvcc = candidate;
							break;
						}
						problems.add("nvcc at " + candidate + " cannot compile (" + problem + ")");
					}
					this.nvccProblem = (this.nvcc == null && !problems.isEmpty()) ? String.join("; ", problems) : null;
					this.nvccResolved = true;
				}
			}
		}
		return this.nvcc;
	}

	/** Compiles an empty kernel with nvcc's default target; {@code null} when that worked, else why not. */
	private static String trialCompile(Path nvccPath) {
		Path dir = null;
		try {
			dir = Files.createTempDirectory("gpu-compute-nvcc-probe-");
			Path cu = Files.writeString(dir.resolve("probe.cu"), "extern \"C\" __global__ void probe() {}\n");
			NvccRun run = runNvcc(List.of(nvccPath.toString(), "-fatbin", "-o", dir.resolve("probe.fatbin").toString(),
					cu.toString()), dir, NVCC_TIMEOUT_SECONDS);
			if (run.exitValue() == null) {
				return "a trial compile did not finish within " + NVCC_TIMEOUT_SECONDS + " s";
			}
			if (run.exitValue() != 0) {
				String output = run.output().strip();
				int newline = output.indexOf('\n');
				return "a trial compile exited with status " + run.exitValue()
						+ (output.isEmpty() ? "" : ": " + ((newline > 0) ? output.substring(0, newline) : output));
			}
			return null;
		}
		catch (IOException ex) {
			return "it could not be run: " + ex;
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			return "interrupted during a trial compile";
		}
		finally {
			deleteQuietly(dir);
		}
	}

	/** The {@code compute_XY} targets {@code nvcc --list-gpu-arch} names, or an empty list. */
	private List<Integer> nvccArchs(Path nvccPath) {
		List<Integer> archs = this.nvccArchs;
		if (archs == null) {
			archs = listNvccArchs(nvccPath);
			this.nvccArchs = archs;
		}
		return archs;
	}

	private static List<Integer> listNvccArchs(Path nvccPath) {
		Path dir = null;
		try {
			dir = Files.createTempDirectory("gpu-compute-nvcc-archs-");
			NvccRun run = runNvcc(List.of(nvccPath.toString(), "--list-gpu-arch"), dir, 60);
			return (run.exitValue() != null && run.exitValue() == 0) ? parseArchs(run.output()) : List.of();
		}
		catch (IOException | RuntimeException ex) {
			return List.of();
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			return List.of();
		}
		finally {
			deleteQuietly(dir);
		}
	}

	/** What an nvcc run printed, and its exit status ({@code null}: killed after the timeout). */
	private record NvccRun(Integer exitValue, String output) {
	}

	/** Runs nvcc in {@code dir}, its output (stdout and stderr) going to a log file there. */
	private static NvccRun runNvcc(List<String> command, Path dir, long timeoutSeconds)
			throws IOException, InterruptedException {
		Path log = dir.resolve("nvcc.log");
		Process process = new ProcessBuilder(command).directory(dir.toFile())
			.redirectErrorStream(true)
			.redirectOutput(log.toFile())
			.start();
		if (!process.waitFor(timeoutSeconds, TimeUnit.SECONDS)) {
			process.destroyForcibly();
			return new NvccRun(null, readQuietly(log));
		}
		return new NvccRun(process.exitValue(), readQuietly(log));
	}

	/** The numbers of the {@code compute_XY} tokens in {@code text}, sorted. */
	static List<Integer> parseArchs(String text) {
		TreeSet<Integer> archs = new TreeSet<>();
		Matcher matcher = COMPUTE_ARCH.matcher(text);
		while (matcher.find()) {
			archs.add(Integer.parseInt(matcher.group(1)));
		}
		return List.copyOf(archs);
	}

	private static String stripNul(String text) {
		if (text == null) {
			return "";
		}
		int end = text.length();
		while (end > 0 && text.charAt(end - 1) == '\0') {
			end--;
		}
		return text.substring(0, end);
	}

	private static String readQuietly(Path file) {
		try {
			return Files.isRegularFile(file) ? Files.readString(file) : "";
		}
		catch (IOException | RuntimeException ex) {
			return "";
		}
	}

	private static void deleteQuietly(Path path) {
		if (path == null) {
			return;
		}
		try (Stream<Path> walk = Files.walk(path)) {
			walk.sorted(Comparator.reverseOrder()).forEach((p) -> {
				try {
					Files.deleteIfExists(p);
				}
				catch (IOException ignored) {
					// best effort
				}
			});
		}
		catch (IOException | RuntimeException ignored) {
			// best effort
		}
	}

	/**
	 * JCuda's NVRTC binding, loaded once per process. Its native part is linked against
	 * {@code libnvrtc.so.12}; when that library is not on the loader's path but can be found (an
	 * explicit setting, {@code CUDA_HOME}, {@code CUDA_PATH} or a {@code /usr/local/cuda-12*}
	 * install), it is loaded first by absolute path, which satisfies the dependency.
	 */
	static final class Nvrtc {

		private static boolean tried;

		private static String problem;

		private static String version = "NVRTC";

		private static List<Integer> archs = List.of();

		private Nvrtc() {
		}

		/** {@code null} when NVRTC works, else why not. */
		static synchronized String problem() {
			if (tried) {
				return problem;
			}
			tried = true;
			preload();
			ClassLoader loader = CudaCompiler.class.getClassLoader();
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

		static synchronized String version() {
			return version;
		}

		static synchronized List<Integer> archs() {
			return archs;
		}

		private static void preload() {
			for (Path candidate : candidates()) {
				if (Files.isRegularFile(candidate)) {
					try {
						System.load(candidate.toAbsolutePath().toString());
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

}
