package dev.gpucompute.cuda;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import dev.gpucompute.KernelCompilationException;
import org.jspecify.annotations.Nullable;

/**
 * The {@code nvcc} route of {@link CudaCompiler}: finding a working {@code nvcc} among the
 * candidates, asking it which architectures it knows, and running it in a temporary directory to
 * make a fatbin with the device's machine code and its PTX.
 *
 * <p>Owns which {@code nvcc} was chosen (or why none could be) and its architecture list, each
 * resolved once and kept. Thread-safe: the choice is made once under this object's monitor (the
 * trial compiles run then, so concurrent first callers wait for them); compilations hold no lock
 * and run in their own temporary directories, which are deleted afterwards.
 */
final class NvccCompiler {

	/** Longest an {@code nvcc} run may take. */
	static final long TIMEOUT_SECONDS = 300;

	private static final Pattern COMPUTE_ARCH = Pattern.compile("compute_(\\d+)");

	private final List<Path> candidates;

	private volatile @Nullable Path nvcc;

	private volatile boolean resolved;

	/** Why the nvcc candidates found were not usable; {@code null} when one is, or none was found. */
	private volatile @Nullable String problem;

	private volatile @Nullable List<Integer> archs;

	/** @param candidates where to look for {@code nvcc}, in order */
	NvccCompiler(List<Path> candidates) {
		this.candidates = List.copyOf(candidates);
	}

	/** {@code nvcc} on {@code PATH}, then under {@code CUDA_HOME}, {@code CUDA_PATH} and {@code /usr/local/cuda}. */
	static List<Path> defaultCandidates() {
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
	 * The first {@code nvcc} among the candidates that compiles a trivial kernel, or {@code null}.
	 * An nvcc that is present but cannot work (no host compiler, an unsupported gcc) is passed over
	 * with its reason kept for the error message ({@link #problem()}), instead of failing every
	 * kernel later.
	 */
	@Nullable Path path() {
		if (!this.resolved) {
			synchronized (this) {
				if (!this.resolved) {
					List<String> problems = new ArrayList<>();
					for (Path candidate : this.candidates) {
						if (!Files.isExecutable(candidate)) {
							continue;
						}
						String trialProblem = trialCompile(candidate);
						if (trialProblem == null) {
							this.nvcc = candidate;
							break;
						}
						problems.add("nvcc at " + candidate + " cannot compile (" + trialProblem + ")");
					}
					this.problem = (this.nvcc == null && !problems.isEmpty()) ? String.join("; ", problems) : null;
					this.resolved = true;
				}
			}
		}
		return this.nvcc;
	}

	/**
	 * Why the {@code nvcc} candidates found could not compile, or {@code null} when one can or none
	 * was found; meaningful once {@link #path()} has been called.
	 */
	@Nullable String problem() {
		return this.problem;
	}

	/**
	 * Compiles {@code source} with the {@code nvcc} at {@code nvccPath} to a fatbin for
	 * {@code compute_<arch>} (machine code and PTX, see {@link #gencode}) unless {@code options} name
	 * a target themselves.
	 * @throws KernelCompilationException with nvcc's output when it fails, cannot be run or runs
	 * past {@link #TIMEOUT_SECONDS}
	 */
	CudaCompiler.Result compile(Path nvccPath, String kernelName, String source, List<String> options, int arch) {
		Path dir = null;
		try {
			dir = Files.createTempDirectory("gpu-compute-nvcc-");
			Path cu = dir.resolve(kernelName + ".cu");
			Path image = dir.resolve(kernelName + ".fatbin");
			Files.writeString(cu, source, StandardCharsets.UTF_8);
			List<String> command = new ArrayList<>();
			command.add(nvccPath.toString());
			command.add("-fatbin");
			if (!CudaCompiler.namesArch(options)) {
				command.add(gencode(arch));
			}
			command.addAll(options);
			command.add("-o");
			command.add(image.toString());
			command.add(cu.toString());
			Run run = run(command, dir, TIMEOUT_SECONDS);
			if (run.exitValue() == null) {
				throw new KernelCompilationException(kernelName, "nvcc did not finish within " + TIMEOUT_SECONDS + " s",
						run.output(), null);
			}
			if (run.exitValue() != 0 || !Files.isRegularFile(image)) {
				throw new KernelCompilationException(kernelName,
						"nvcc exited with status " + run.exitValue() + " (" + String.join(" ", command) + ")", run.output(), null);
			}
			return new CudaCompiler.Result(Files.readAllBytes(image), "nvcc (" + nvccPath + ")", run.output());
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

	/** Compiles an empty kernel with nvcc's default target; {@code null} when that worked, else why not. */
	private static @Nullable String trialCompile(Path nvccPath) {
		Path dir = null;
		try {
			dir = Files.createTempDirectory("gpu-compute-nvcc-probe-");
			Path cu = Files.writeString(dir.resolve("probe.cu"), "extern \"C\" __global__ void probe() {}\n");
			Run run = run(List.of(nvccPath.toString(), "-fatbin", "-o", dir.resolve("probe.fatbin").toString(),
					cu.toString()), dir, TIMEOUT_SECONDS);
			if (run.exitValue() == null) {
				return "a trial compile did not finish within " + TIMEOUT_SECONDS + " s";
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

	/**
	 * The {@code compute_XY} targets {@code nvcc --list-gpu-arch} names, or an empty list; asked once
	 * per compiler (two threads may both ask the first time; they get the same answer).
	 */
	List<Integer> archs(Path nvccPath) {
		List<Integer> known = this.archs;
		if (known == null) {
			known = listArchs(nvccPath);
			this.archs = known;
		}
		return known;
	}

	private static List<Integer> listArchs(Path nvccPath) {
		Path dir = null;
		try {
			dir = Files.createTempDirectory("gpu-compute-nvcc-archs-");
			Run run = run(List.of(nvccPath.toString(), "--list-gpu-arch"), dir, 60);
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

	/** The numbers of the {@code compute_XY} tokens in {@code text}, sorted. */
	static List<Integer> parseArchs(String text) {
		TreeSet<Integer> archs = new TreeSet<>();
		Matcher matcher = COMPUTE_ARCH.matcher(text);
		while (matcher.find()) {
			archs.add(Integer.parseInt(matcher.group(1)));
		}
		return List.copyOf(archs);
	}

	/** What an nvcc run printed, and its exit status ({@code null}: killed after the timeout). */
	private record Run(@Nullable Integer exitValue, String output) {
	}

	/** Runs nvcc in {@code dir}, its output (stdout and stderr) going to a log file there. */
	private static Run run(List<String> command, Path dir, long timeoutSeconds) throws IOException, InterruptedException {
		Path log = dir.resolve("nvcc.log");
		Process process = new ProcessBuilder(command).directory(dir.toFile())
			.redirectErrorStream(true)
			.redirectOutput(log.toFile())
			.start();
		if (!process.waitFor(timeoutSeconds, TimeUnit.SECONDS)) {
			process.destroyForcibly();
			return new Run(null, readQuietly(log));
		}
		return new Run(process.exitValue(), readQuietly(log));
	}

	private static String readQuietly(Path file) {
		try {
			return Files.isRegularFile(file) ? Files.readString(file) : "";
		}
		catch (IOException | RuntimeException ex) {
			return "";
		}
	}

	private static void deleteQuietly(@Nullable Path path) {
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

}
