package dev.gpucompute.expression;

import java.io.IOException;
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

import dev.gpucompute.KernelSource;
import dev.gpucompute.ParamType;

/**
 * Expression kernels' generated CUDA source run on the host, in the emulator of the CUDA execution
 * model of the project's {@code cuda-emulator} folder (each CUDA thread a fiber; barriers and shuffles
 * checked), built with the host's C++ compiler, AddressSanitizer and UndefinedBehaviorSanitizer, and
 * {@code -ffp-contract=off} (no multiply-add is fused, as with {@code -fmad=false}). The emulator's
 * header gives fminf/fmaxf and float-to-integer conversions the GPU's semantics; the transcendental
 * functions are the host's. So a test compares the generated CUDA with the generated Java without a GPU.
 *
 * <p>All kernels of a test class are built into one program, once per source text, under
 * {@code target/cuda-emulator/<hash>}. Linux only (ucontext). Tests that use it are skipped where it
 * cannot be built, saying why, and fail instead with {@code KERNEL_EMULATOR_REQUIRED=1} ({@code .ci/run}
 * sets it where it has {@code g++}).
 */
final class ExpressionEmulator {

	private static final Path EMULATOR = Path.of("..", "cuda-emulator");

	private static final Path LAUNCHER = Path.of("src", "test", "cuda-emulator", "expr_launch.cpp");

	private static final Path BUILD = Path.of("target", "cuda-emulator");

	private static final List<String> FLAGS = List.of("-std=gnu++17", "-O1", "-g", "-fno-omit-frame-pointer",
			"-ffp-contract=off", "-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-Wall",
			"-Wno-unknown-pragmas", "-Wno-unused-function");

	private static final long TIMEOUT_SECONDS = 300;

	private final Path executable;

	private final List<String> kernels;

	private ExpressionEmulator(Path executable, List<String> kernels) {
		this.executable = executable;
		this.kernels = kernels;
	}

	/** Enables a test where a C++ compiler is found on Linux; see the class comment. */
	static final class Available implements ExecutionCondition {

		@Override
		public ConditionEvaluationResult evaluateExecutionCondition(ExtensionContext context) {
			String missing = unavailable();
			if (missing == null) {
				return ConditionEvaluationResult.enabled("C++ compiler: " + compiler());
			}
			if ("1".equals(System.getenv("KERNEL_EMULATOR_REQUIRED"))) {
				throw new AssertionFailedError("KERNEL_EMULATOR_REQUIRED=1 but " + missing);
			}
			return ConditionEvaluationResult.disabled(missing);
		}

	}

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

	/**
	 * Builds one program that runs any of {@code sources}, or skips the test class when the compiler
	 * cannot build it (one without the sanitizers' runtime), unless {@code KERNEL_EMULATOR_REQUIRED=1}.
	 */
	static ExpressionEmulator buildOrSkip(List<KernelSource> sources) {
		try {
			return build(sources);
		}
		catch (IllegalStateException ex) {
			if ("1".equals(System.getenv("KERNEL_EMULATOR_REQUIRED"))) {
				throw ex;
			}
			org.junit.jupiter.api.Assumptions.abort("the CUDA kernel emulator cannot be built here: " + ex.getMessage());
			throw ex;
		}
	}

	/** Builds one program that runs any of {@code sources} (their generated CUDA C). */
	static ExpressionEmulator build(List<KernelSource> sources) {
		try {
			List<String[]> files = new ArrayList<>();
			files.add(new String[] { "cuda_emu.h", Files.readString(EMULATOR.resolve("cuda_emu.h")) });
			files.add(new String[] { "cuda_emu.cpp", Files.readString(EMULATOR.resolve("cuda_emu.cpp")) });
			files.add(new String[] { "expr_launch.cpp", Files.readString(LAUNCHER) });
			StringBuilder includes = new StringBuilder();
			StringBuilder dispatch = new StringBuilder(
					"void dispatch(int kernel, uint3 grid, uint3 block, uint64_t seed, std::vector<Arg>& a)\n{\n"
							+ "\tswitch (kernel) {\n");
			List<String> names = new ArrayList<>();
			for (int k = 0; k < sources.size(); k++) {
				KernelSource source = sources.get(k);
				String file = "k" + k + ".cu";
				files.add(new String[] { file, forHost(source.cudaText()) });
				includes.append("namespace k").append(k).append("_cu {\n#include \"").append(file).append("\"\n}\n");
				dispatch.append("\tcase ").append(k).append(":\n\t\temu::launch(grid, block, 0, seed, false, [&] { k").append(k)
					.append("_cu::").append(source.name()).append('(');
				for (int p = 0; p < source.paramCount(); p++) {
					dispatch.append((p > 0) ? ", " : "").append(argument(source.param(p), p));
				}
				dispatch.append("); });\n\t\treturn;\n");
				names.add(source.name());
			}
			dispatch.append("\t}\n\tstd::fprintf(stderr, \"no kernel %d\\n\", kernel);\n\tstd::exit(2);\n}\n");
			files.add(new String[] { "kernels.inc", includes + "\n" + dispatch });
			String compiler = compiler();
			MessageDigest digest = MessageDigest.getInstance("SHA-256");
			digest.update((compiler + FLAGS).getBytes(StandardCharsets.UTF_8));
			for (String[] f : files) {
				digest.update(f[0].getBytes(StandardCharsets.UTF_8));
				digest.update(f[1].getBytes(StandardCharsets.UTF_8));
			}
			Path dir = BUILD.resolve(HexFormat.of().formatHex(digest.digest(), 0, 8)).toAbsolutePath();
			Path executable = dir.resolve("expr_launch");
			if (Files.isExecutable(executable)) {
				return new ExpressionEmulator(executable, names);
			}
			Files.createDirectories(dir);
			for (String[] f : files) {
				Files.writeString(dir.resolve(f[0]), f[1]);
			}
			List<String> command = new ArrayList<>();
			command.add(compiler);
			command.addAll(FLAGS);
			command.addAll(List.of("-o", "expr_launch.tmp", "expr_launch.cpp", "cuda_emu.cpp"));
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
			Files.move(dir.resolve("expr_launch.tmp"), executable, java.nio.file.StandardCopyOption.ATOMIC_MOVE);
			return new ExpressionEmulator(executable, names);
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

	private static String argument(ParamType type, int index) {
		return switch (type) {
			case INT -> "a[" + index + "].i32()";
			case LONG -> "a[" + index + "].i64()";
			case FLOAT -> "a[" + index + "].f32()";
			case DOUBLE -> "a[" + index + "].f64()";
			case BUFFER -> "a[" + index + "].buffer()";
		};
	}

	/** A kernel's source as host C++: static shared arrays become function statics (blocks run one after the other). */
	static String forHost(String cuda) {
		return cuda.replace("__shared__", "static");
	}

	/**
	 * One launch of {@code source} on {@code grid} blocks of {@code block} threads.
	 * @param args in parameter order: {@code Integer}, {@code Long}, {@code Float}, {@code Double}, or a
	 * {@code ByteBuffer} (its whole capacity, native order) for a buffer
	 * @return the buffers' contents after the launch, in argument order
	 */
	List<ByteBuffer> run(KernelSource source, int grid, int block, long seed, Object... args) {
		int kernel = this.kernels.indexOf(source.name());
		if (kernel < 0) {
			throw new IllegalArgumentException("Kernel '" + source.name() + "' is not in this emulator build");
		}
		long size = 4 * 4 + 8 + 4;
		for (Object arg : args) {
			size += 4 + ((arg instanceof ByteBuffer buffer) ? 8 + buffer.capacity() : 8);
		}
		ByteBuffer input = ByteBuffer.allocate(Math.toIntExact(size)).order(ByteOrder.LITTLE_ENDIAN);
		input.putInt(kernel).putInt(grid).putInt(block).putLong(seed).putInt(args.length);
		List<Integer> sizes = new ArrayList<>();
		for (Object arg : args) {
			if (arg instanceof Integer v) {
				input.putInt(0).putLong(v & 0xffffffffL);
			}
			else if (arg instanceof Long v) {
				input.putInt(1).putLong(v);
			}
			else if (arg instanceof Float v) {
				input.putInt(2).putLong(Float.floatToRawIntBits(v) & 0xffffffffL);
			}
			else if (arg instanceof Double v) {
				input.putInt(3).putLong(Double.doubleToRawLongBits(v));
			}
			else if (arg instanceof ByteBuffer buffer) {
				input.putInt(4).putLong(buffer.capacity());
				input.put(buffer.duplicate().clear());
				sizes.add(buffer.capacity());
			}
			else {
				throw new IllegalArgumentException("Unsupported argument " + arg);
			}
		}
		Path dir = null;
		try {
			dir = Files.createTempDirectory("expr-emulator-");
			Path in = dir.resolve("in.bin");
			Path out = dir.resolve("out.bin");
			Path err = dir.resolve("stderr.txt");
			Files.write(in, input.array());
			ProcessBuilder builder = new ProcessBuilder(this.executable.toString(), in.toString(), out.toString())
				.redirectOutput(ProcessBuilder.Redirect.DISCARD)
				.redirectError(err.toFile());
			builder.environment().put("ASAN_OPTIONS", "detect_leaks=0");
			builder.environment().put("UBSAN_OPTIONS", "print_stacktrace=1");
			Process process = builder.start();
			if (!process.waitFor(TIMEOUT_SECONDS, TimeUnit.SECONDS)) {
				process.destroyForcibly().waitFor();
				throw new AssertionFailedError("The emulated launch of '" + source.name() + "' ran over " + TIMEOUT_SECONDS + " s");
			}
			if (process.exitValue() != 0) {
				throw new AssertionFailedError("The emulated launch of '" + source.name() + "' failed (exit "
						+ process.exitValue() + "):\n" + Files.readString(err));
			}
			ByteBuffer output = ByteBuffer.wrap(Files.readAllBytes(out)).order(ByteOrder.nativeOrder());
			List<ByteBuffer> buffers = new ArrayList<>();
			for (int bytes : sizes) {
				ByteBuffer buffer = ByteBuffer.allocate(bytes).order(ByteOrder.nativeOrder());
				buffer.put(output.slice(output.position(), bytes));
				output.position(output.position() + bytes);
				buffers.add(buffer.clear());
			}
			return buffers;
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
