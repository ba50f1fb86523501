package dev.gpucompute.cuda;

import java.io.File;
import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import org.jspecify.annotations.Nullable;

/**
 * Where an NVRTC library ({@code libnvrtc.so.N}) may be on this machine, in the order they are
 * tried:
 * <ol>
 * <li>the file named by {@code -Dgpu.cuda.nvrtc-library} or {@code GPU_NVRTC_LIBRARY};</li>
 * <li>{@code lib64}, {@code lib} and {@code targets/x86_64-linux/lib} under {@code CUDA_HOME} and
 * {@code CUDA_PATH};</li>
 * <li>the directories of {@code LD_LIBRARY_PATH};</li>
 * <li>{@code /usr/local/cuda/lib64}, then {@code /usr/local/cuda-*}/lib64 (newest first);</li>
 * <li>the distribution's library directories ({@code /usr/lib/x86_64-linux-gnu}, {@code /usr/lib64});</li>
 * <li>the {@code nvidia/<package>/lib} directories of Python's {@code site-packages} where pip puts
 * the {@code nvidia-cuda-nvrtc} wheels: under {@code VIRTUAL_ENV}, {@code CONDA_PREFIX}, {@code /opt/*},
 * {@code /opt/*}{@code /.venv}, {@code /usr/local}, {@code /usr} and {@code ~/.local}.</li>
 * </ol>
 * In each directory the newest {@code libnvrtc.so.N} comes first. Pure file-system work, tested on
 * a directory tree made by the test.
 */
final class NvrtcLocator {

	private static final Pattern NVRTC_FILE = Pattern.compile("libnvrtc\\.so(?:\\.(\\d+)(?:\\.(\\d+))?)?(?:\\.\\d+)*");

	private final Path root;

	private final Map<String, String> env;

	private final @Nullable String explicit;

	private final @Nullable Path home;

	/**
	 * @param root the file system root (a test directory in tests)
	 * @param env the environment
	 * @param explicit the {@code gpu.cuda.nvrtc-library} system property, or {@code null}
	 * @param home the user's home directory, or {@code null}
	 */
	NvrtcLocator(Path root, Map<String, String> env, @Nullable String explicit, @Nullable Path home) {
		this.root = root;
		this.env = env;
		this.explicit = explicit;
		this.home = home;
	}

	/** The locator for this machine. */
	static NvrtcLocator system() {
		String home = System.getProperty("user.home");
		return new NvrtcLocator(Path.of("/"), System.getenv(), System.getProperty("gpu.cuda.nvrtc-library"),
				(home != null && !home.isBlank()) ? Path.of(home) : null);
	}

	/** The explicitly configured library, or {@code null}. */
	@Nullable String explicitLibrary() {
		String value = (this.explicit != null && !this.explicit.isBlank()) ? this.explicit : this.env.get("GPU_NVRTC_LIBRARY");
		return (value != null && !value.isBlank()) ? value : null;
	}

	/** The existing NVRTC library files, most preferred first. */
	List<Path> candidates() {
		Set<Path> files = new LinkedHashSet<>();
		String explicitLibrary = explicitLibrary();
		if (explicitLibrary != null) {
			files.add(Path.of(explicitLibrary));
		}
		for (Path dir : directories()) {
			files.addAll(inDirectory(dir));
		}
		return new ArrayList<>(files);
	}

	/** The directories searched, in order (whether or not they exist). */
	List<Path> directories() {
		Set<Path> dirs = new LinkedHashSet<>();
		for (String variable : List.of("CUDA_HOME", "CUDA_PATH")) {
			String home = this.env.get(variable);
			if (home != null && !home.isBlank()) {
				Path base = at(home);
				dirs.add(base.resolve("lib64"));
				dirs.add(base.resolve("lib"));
				dirs.add(base.resolve("targets/x86_64-linux/lib"));
			}
		}
		String ldLibraryPath = this.env.get("LD_LIBRARY_PATH");
		if (ldLibraryPath != null) {
			for (String dir : ldLibraryPath.split(File.pathSeparator)) {
				if (dir.startsWith("/")) {
					dirs.add(at(dir));
				}
			}
		}
		dirs.add(at("/usr/local/cuda/lib64"));
		dirs.addAll(newestFirst(at("/usr/local"), "cuda-*", "lib64"));
		dirs.add(at("/usr/lib/x86_64-linux-gnu"));
		dirs.add(at("/usr/lib64"));
		dirs.add(at("/usr/lib/aarch64-linux-gnu"));
		List<Path> pythonRoots = new ArrayList<>();
		for (String variable : List.of("VIRTUAL_ENV", "CONDA_PREFIX")) {
			String prefix = this.env.get(variable);
			if (prefix != null && !prefix.isBlank()) {
				pythonRoots.add(at(prefix));
			}
		}
		for (Path opt : list(at("/opt"), "*")) {
			pythonRoots.add(opt.resolve(".venv"));
			pythonRoots.add(opt.resolve("venv"));
			pythonRoots.add(opt);
		}
		pythonRoots.add(at("/usr/local"));
		pythonRoots.add(at("/usr"));
		if (this.home != null) {
			pythonRoots.add(at(this.home.toString()).resolve(".local"));
		}
		for (Path prefix : pythonRoots) {
			for (Path python : newestFirst(prefix.resolve("lib"), "python3*", null)) {
				for (String packages : List.of("site-packages", "dist-packages")) {
					dirs.addAll(list(python.resolve(packages).resolve("nvidia"), "*").stream()
						.map((dir) -> dir.resolve("lib"))
						.toList());
				}
			}
		}
		return new ArrayList<>(dirs);
	}

	/** The NVRTC libraries in {@code dir}, highest version first; builtins and {@code .alt} variants left out. */
	static List<Path> inDirectory(Path dir) {
		List<Path> found = new ArrayList<>();
		if (!Files.isDirectory(dir)) {
			return found;
		}
		try (Stream<Path> files = Files.list(dir)) {
			files.filter((path) -> NVRTC_FILE.matcher(path.getFileName().toString()).matches())
				.filter(Files::isRegularFile)
				.sorted(Comparator.comparingLong(NvrtcLocator::version).reversed().thenComparing(Path::toString))
				.forEach(found::add);
		}
		catch (IOException | RuntimeException ex) {
			// unreadable directory: nothing found there
		}
		return found;
	}

	/** major * 1000 + minor of a file name; an unversioned {@code libnvrtc.so} sorts last. */
	private static long version(Path file) {
		Matcher matcher = NVRTC_FILE.matcher(file.getFileName().toString());
		if (!matcher.matches() || matcher.group(1) == null) {
			return -1;
		}
		return Long.parseLong(matcher.group(1)) * 1000 + ((matcher.group(2) != null) ? Long.parseLong(matcher.group(2)) : 0);
	}

	private Path at(String absolute) {
		return this.root.resolve(absolute.startsWith("/") ? absolute.substring(1) : absolute);
	}

	private static List<Path> newestFirst(Path dir, String glob, @Nullable String child) {
		List<Path> found = list(dir, glob);
		found.sort(Comparator.reverseOrder());
		return (child != null) ? found.stream().map((path) -> path.resolve(child)).toList() : found;
	}

	private static List<Path> list(Path dir, String glob) {
		List<Path> found = new ArrayList<>();
		if (!Files.isDirectory(dir)) {
			return found;
		}
		try (DirectoryStream<Path> entries = Files.newDirectoryStream(dir, glob)) {
			for (Path entry : entries) {
				if (Files.isDirectory(entry)) {
					found.add(entry);
				}
			}
		}
		catch (IOException | RuntimeException ex) {
			// unreadable: nothing found
		}
		return found;
	}

}
