package dev.gpucompute.sample.search;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.extension.ConditionEvaluationResult;
import org.junit.jupiter.api.extension.ExecutionCondition;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.opentest4j.AssertionFailedError;

/**
 * The search kernels' own CUDA source run on the host: the emulator of the project's
 * {@code cuda-emulator} folder (shared with the runtime's tests) emulates the
 * CUDA execution model strictly (each thread a fiber; barriers, warp masks and shuffles checked; a
 * seeded order of threads between synchronisation points) and is built here with the host's C++
 * compiler, AddressSanitizer and UndefinedBehaviorSanitizer. So CI runs the kernels' indexing,
 * barriers, shuffles and selection logic without a GPU, catches out-of-bounds and misaligned
 * accesses and a shared-memory size the host computed too small, and compares the bits with the
 * CPU twins. It does not model memory timing or the device's arithmetic units: fma and the order of
 * additions are the kernels' own, which is what the twins define.
 *
 * <p>Built once per source text into {@code target/cuda-emulator/<hash>}. Linux only (ucontext);
 * tests that use it are skipped where it cannot be built (no C++ compiler, or one without the
 * sanitizers' runtime), saying why, and fail instead with {@code KERNEL_EMULATOR_REQUIRED=1}
 * ({@code .ci/run} sets it where it has {@code g++}). Not thread-safe: one test class at a time uses
 * an instance.
 */
final class KernelEmulator {

	/** This module's launcher of the emulator, relative to the module (the tests' working directory). */
	static final Path SOURCES = Path.of("src", "test", "cuda-emulator");

	/** The emulator itself, shared with the runtime's tests. */
	static final Path EMULATOR = Path.of("..", "cuda-emulator");

	private static final Path BUILD = Path.of("target", "cuda-emulator");

	private static final String[] KERNELS = { "knn_fused", "knn_topk", "knn_merge" };

	private static final List<String> FLAGS = List.of("-std=gnu++17", "-O1", "-g", "-fno-omit-frame-pointer",
			"-ffp-contract=off", "-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-Wall",
			"-Wno-unknown-pragmas");

	private static final long TIMEOUT_SECONDS = 300;

	private static KernelEmulator instance;

	private static RuntimeException buildFailure;

	private final Path executable;

	private KernelEmulator(Path executable) {
		this.executable = executable;
	}

	/** A violation the emulator or a sanitizer found: the kernel would fault, hang or race on a device. */
	static final class KernelFault extends RuntimeException {

		KernelFault(String message) {
			super(message);
		}

	}

	/** Enables a test where the emulator can be built; see the class comment. */
	static final class Available implements ExecutionCondition {

		@Override
		public ConditionEvaluationResult evaluateExecutionCondition(ExtensionContext context) {
			String missing = unavailable();
			if (missing == null) {
				try {
					get();
					return ConditionEvaluationResult.enabled("C++ compiler: " + compiler());
				}
				catch (RuntimeException ex) {
					// A compiler without the sanitizers' runtime, for one: where the emulator is required, a failure.
					missing = ex.getMessage();
				}
			}
			if ("1".equals(System.getenv("KERNEL_EMULATOR_REQUIRED"))) {
				throw new AssertionFailedError("KERNEL_EMULATOR_REQUIRED=1 but " + missing);
			}
			return ConditionEvaluationResult.disabled(missing);
		}

	}

	/** Why the emulator cannot run here, or null. */
	static String unavailable() {
		if (!System.getProperty("os.name", "").toLowerCase(Locale.ROOT).contains("linux")) {
			return "the CUDA kernel emulator runs on Linux only (ucontext fibers), not " + System.getProperty("os.name");
		}
		return (compiler() == null) ? "no C++ compiler (g++, c++ or $CXX) on the PATH for the CUDA kernel emulator" : null;
	}

	private static String compiler() {
		List<String> candidates = new ArrayList<>();
		String cxx = System.getenv("CXX");
		if (cxx != null && !cxx.isBlank()) {
			candidates.add(cxx.strip());
		}
		candidates.add("g++");
		candidates.add("c++");
		for (String candidate : candidates) {
			Path path = Path.of(candidate);
			if (path.isAbsolute()) {
				if (Files.isExecutable(path)) {
					return candidate;
				}
				continue;
			}
			for (String dir : System.getenv().getOrDefault("PATH", "").split(java.io.File.pathSeparator)) {
				if (!dir.isEmpty() && Files.isExecutable(Path.of(dir, candidate))) {
					return Path.of(dir, candidate).toString();
				}
			}
		}
		return null;
	}

	/** The emulator, built on first use (a few seconds); a failed build is not tried again. */
	static synchronized KernelEmulator get() {
		if (buildFailure != null) {
			throw buildFailure;
		}
		if (instance == null) {
			try {
				instance = new KernelEmulator(build());
			}
			catch (RuntimeException ex) {
				buildFailure = ex;
				throw ex;
			}
		}
		return instance;
	}

	private static Path build() {
		try {
			List<String> names = List.of("cuda_emu.h", "cuda_emu.cpp", "knn_launch.cpp");
			StringBuilder kernels = new StringBuilder();
			List<String[]> files = new ArrayList<>();
			for (String name : names) {
				Path dir = name.startsWith("cuda_emu") ? EMULATOR : SOURCES;
				files.add(new String[] { name, Files.readString(dir.resolve(name)) });
			}
			for (String kernel : KERNELS) {
				String file = kernel + ".emu.cu";
				files.add(new String[] { file, forHost(resource(KnnKernels.LOCATION + kernel + ".cu")) });
				kernels.append("namespace ").append(kernel).append("_cu {\n#include \"").append(file).append("\"\n}\n")
					.append("using ").append(kernel).append("_cu::").append(kernel).append(";\n");
			}
			files.add(new String[] { "kernels.inc", kernels.toString() });
			String compiler = compiler();
			MessageDigest digest = MessageDigest.getInstance("SHA-256");
			digest.update((compiler + FLAGS).getBytes(StandardCharsets.UTF_8));
			for (String[] file : files) {
				digest.update(file[0].getBytes(StandardCharsets.UTF_8));
				digest.update(file[1].getBytes(StandardCharsets.UTF_8));
			}
			Path dir = BUILD.resolve(HexFormat.of().formatHex(digest.digest(), 0, 8)).toAbsolutePath();
			Path executable = dir.resolve("knn_launch");
			if (Files.isExecutable(executable)) {
				return executable;
			}
			Files.createDirectories(dir);
			for (String[] file : files) {
				Files.writeString(dir.resolve(file[0]), file[1]);
			}
			List<String> command = new ArrayList<>();
			command.add(compiler);
			command.addAll(FLAGS);
			command.addAll(List.of("-o", "knn_launch.tmp", "knn_launch.cpp", "cuda_emu.cpp"));
			Process process = new ProcessBuilder(command).directory(dir.toFile()).redirectErrorStream(true).start();
			String log = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
			if (!process.waitFor(TIMEOUT_SECONDS, TimeUnit.SECONDS)) {
				process.destroyForcibly();
				throw new IllegalStateException("Building the CUDA kernel emulator took over " + TIMEOUT_SECONDS + " s");
			}
			if (process.exitValue() != 0) {
				throw new IllegalStateException("Building the CUDA kernel emulator failed (" + String.join(" ", command)
						+ " in " + dir + "):\n" + log);
			}
			Files.move(dir.resolve("knn_launch.tmp"), executable, java.nio.file.StandardCopyOption.ATOMIC_MOVE);
			return executable;
		}
		catch (IOException ex) {
			throw new UncheckedIOException(ex);
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			throw new IllegalStateException("Interrupted while building the CUDA kernel emulator", ex);
		}
		catch (NoSuchAlgorithmException ex) {
			throw new IllegalStateException(ex);
		}
	}

	/**
	 * A kernel file as host C++ for the emulator: its dynamic shared memory array becomes a pointer to
	 * the emulator's (allocated at the launch's size), static {@code __shared__} arrays function statics
	 * (blocks run one after the other).
	 */
	static String forHost(String cuda) {
		String host = cuda.replaceAll("extern __shared__ (\\w+) (\\w+)\\[\\];", "$1* $2 = ($1*) emu::dynamicShared();");
		return host.replace("__shared__", "static");
	}

	private static String resource(String name) throws IOException {
		try (InputStream in = KernelEmulator.class.getClassLoader().getResourceAsStream(name)) {
			if (in == null) {
				throw new IOException("No resource " + name);
			}
			return new String(in.readAllBytes(), StandardCharsets.UTF_8);
		}
	}

	/**
	 * One {@code knn_fused} launch: grid ({@code ceil(count / groupQueries)}, {@code ranges}), block
	 * {@value KnnGeometry#FUSED_BLOCK}, exactly {@code sharedBytes} of dynamic shared memory.
	 * @param seed the order of threads between synchronisation points
	 * @param yieldAtAtomics whether a thread may also be interrupted after each atomic (more orders)
	 * @return the {@code count * ranges * k} entries the launch wrote
	 * @throws KernelFault when the emulator or a sanitizer reports a violation
	 */
	SearchRun.Result fused(float[] vectors, int dim, float[] queries, int k, int rowsPerBlock, int groupQueries,
			int ranges, int sharedBytes, long seed, boolean yieldAtAtomics) {
		return fused(vectors, dim, queries, k, rowsPerBlock, groupQueries, DeviceSearch.ceilDiv(queries.length / dim,
				groupQueries), ranges, sharedBytes, seed, yieldAtAtomics);
	}

	/**
	 * One {@code knn_fused} launch of {@code gridX} blocks of queries, whatever the group size says: a
	 * grid the host never launches, for the kernel's own answer to it.
	 */
	SearchRun.Result fused(float[] vectors, int dim, float[] queries, int k, int rowsPerBlock, int groupQueries,
			int gridX, int ranges, int sharedBytes, long seed, boolean yieldAtAtomics) {
		int n = vectors.length / dim;
		int count = queries.length / dim;
		int entries = count * ranges * Math.max(0, k);
		ByteBuffer input = header(1, gridX, ranges, KnnGeometry.FUSED_BLOCK, sharedBytes,
				seed, yieldAtAtomics, 7 * 4 + 4L * vectors.length + 4L * queries.length);
		input.putInt(n).putInt(dim).putInt(count).putInt(k).putInt(rowsPerBlock).putInt(groupQueries).putInt(entries);
		input.asFloatBuffer().put(vectors).put(queries);
		return run(input, entries);
	}

	/**
	 * One {@code knn_topk} launch over {@code rows} rows of {@code m} candidates: grid ({@code chunks},
	 * {@code rows}), block {@value KnnGeometry#TOPK_BLOCK}.
	 * @param ids the candidates' ids, or null (useIds = 0)
	 * @return the {@code rows * chunks * min(k, CHUNK)} entries the launch wrote
	 */
	SearchRun.Result topk(float[] scores, int[] ids, int rows, int k, int idBase, int chunks, long seed) {
		int m = scores.length / rows;
		int entries = rows * chunks * Math.min(k, KnnGeometry.CHUNK);
		long body = 6 * 4 + 4L * scores.length + ((ids != null) ? 4L * ids.length : 0);
		ByteBuffer input = header(2, chunks, rows, KnnGeometry.TOPK_BLOCK, 0, seed, false, body);
		input.putInt(m).putInt(k).putInt((ids != null) ? 1 : 0).putInt(idBase).putInt(rows).putInt(entries);
		input.asFloatBuffer().put(scores);
		input.position(input.position() + 4 * scores.length);
		if (ids != null) {
			input.asIntBuffer().put(ids);
		}
		return run(input, entries);
	}

	/**
	 * One {@code knn_merge} launch over {@code lists}: grid ({@code queries}), {@code threads} per block.
	 * @return the {@code queries * k} entries the launch wrote
	 */
	SearchRun.Result merge(MergeRun.Lists lists, int threads, long seed) {
		int entries = lists.queries() * lists.k();
		long body = 4 * 4 + 4L * lists.scores().length + 4L * lists.ids().length;
		ByteBuffer input = header(3, lists.queries(), 1, threads, 0, seed, false, body);
		input.putInt(lists.runs()).putInt(lists.k()).putInt(lists.queries()).putInt(entries);
		input.asFloatBuffer().put(lists.scores());
		input.position(input.position() + 4 * lists.scores().length);
		input.asIntBuffer().put(lists.ids());
		return run(input, entries);
	}

	private static ByteBuffer header(int kernel, int gridX, int gridY, int block, int sharedBytes, long seed,
			boolean yieldAtAtomics, long body) {
		ByteBuffer input = ByteBuffer.allocate(Math.toIntExact(6 * 4 + 8 + body)).order(ByteOrder.LITTLE_ENDIAN);
		input.putInt(kernel).putInt(gridX).putInt(gridY).putInt(block).putInt(sharedBytes).putInt(yieldAtAtomics ? 1 : 0)
			.putLong(seed);
		return input;
	}

	private SearchRun.Result run(ByteBuffer input, int entries) {
		Path dir = null;
		try {
			dir = Files.createTempDirectory("knn-emulator-");
			Path in = dir.resolve("in.bin");
			Path out = dir.resolve("out.bin");
			Path err = dir.resolve("stderr.txt");
			Files.write(in, input.array());
			ProcessBuilder builder = new ProcessBuilder(this.executable.toString(), in.toString(), out.toString())
				.redirectOutput(ProcessBuilder.Redirect.DISCARD)
				.redirectError(err.toFile());
			// LeakSanitizer needs ptrace, which containers often refuse; leaks are not what this looks for.
			builder.environment().put("ASAN_OPTIONS", "detect_leaks=0");
			builder.environment().put("UBSAN_OPTIONS", "print_stacktrace=1");
			Process process = builder.start();
			if (!process.waitFor(TIMEOUT_SECONDS, TimeUnit.SECONDS)) {
				process.destroyForcibly().waitFor();
				throw new KernelFault("The emulated launch ran over " + TIMEOUT_SECONDS + " s");
			}
			if (process.exitValue() != 0) {
				throw new KernelFault("The emulated launch failed (exit " + process.exitValue() + "):\n" + report(err));
			}
			ByteBuffer output = ByteBuffer.wrap(Files.readAllBytes(out)).order(ByteOrder.LITTLE_ENDIAN);
			SearchRun.Result result = new SearchRun.Result(new float[entries], new int[entries]);
			output.asFloatBuffer().get(result.scores());
			output.position(4 * entries);
			output.asIntBuffer().get(result.slots());
			return result;
		}
		catch (IOException ex) {
			throw new UncheckedIOException(ex);
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			throw new IllegalStateException("Interrupted while waiting for the emulated launch", ex);
		}
		finally {
			delete(dir);
		}
	}

	/** The report's lines that say what happened (the sanitizers' shadow-byte tables left out). */
	private static String report(Path err) throws IOException {
		StringBuilder report = new StringBuilder();
		for (String line : Files.readAllLines(err, StandardCharsets.UTF_8)) {
			if (line.startsWith("Shadow bytes") || report.length() > 8000) {
				break;
			}
			if (!line.contains("doesn't fully support makecontext/swapcontext")) {
				report.append(line).append('\n');
			}
		}
		return report.toString();
	}

	private static void delete(Path dir) {
		if (dir == null) {
			return;
		}
		try (var files = Files.list(dir)) {
			for (Path file : files.toList()) {
				Files.deleteIfExists(file);
			}
			Files.deleteIfExists(dir);
		}
		catch (IOException ex) {
			// A temporary directory left behind is harmless.
		}
	}

}
