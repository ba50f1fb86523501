package dev.gpucompute.cuda;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

import org.jspecify.annotations.Nullable;

/**
 * Whether this machine shows signs of an NVIDIA driver, without loading it: the kernel module's
 * {@code /proc/driver/nvidia}, the {@code /dev/nvidiactl} device, or a {@code libcuda.so.1} in
 * the loader's usual directories. When CUDA cannot be used although one of these is there, the
 * installation is broken and {@code auto} warns instead of quietly choosing the CPU.
 */
final class DriverPresence {

	private static final List<String> LIBRARY_DIRS = List.of("/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib",
			"/lib/x86_64-linux-gnu", "/lib64", "/usr/local/nvidia/lib64", "/usr/local/nvidia/lib", "/usr/lib/wsl/lib",
			"/usr/local/cuda/compat", "/usr/lib/aarch64-linux-gnu");

	private DriverPresence() {
	}

	/** What shows an NVIDIA driver here, or {@code null} when nothing does. */
	static @Nullable String describe() {
		return describe(Path.of("/"), System.getenv("LD_LIBRARY_PATH"));
	}

	/**
	 * @param root the file system root (a test directory in tests)
	 * @param ldLibraryPath {@code LD_LIBRARY_PATH}, or {@code null}
	 */
	static @Nullable String describe(Path root, @Nullable String ldLibraryPath) {
		List<String> signs = new ArrayList<>();
		if (Files.exists(root.resolve("proc/driver/nvidia"))) {
			signs.add("/proc/driver/nvidia exists");
		}
		if (Files.exists(root.resolve("dev/nvidiactl"))) {
			signs.add("/dev/nvidiactl exists");
		}
		Set<String> dirs = new LinkedHashSet<>();
		if (ldLibraryPath != null) {
			for (String dir : ldLibraryPath.split(File.pathSeparator)) {
				if (dir.startsWith("/")) {
					dirs.add(dir);
				}
			}
		}
		dirs.addAll(LIBRARY_DIRS);
		for (String dir : dirs) {
			Path library = root.resolve(dir.substring(1)).resolve("libcuda.so.1");
			if (Files.exists(library)) {
				signs.add("libcuda.so.1 is in " + dir);
				break;
			}
		}
		return signs.isEmpty() ? null : String.join(", ", signs);
	}

}
