package dev.gpucompute.autoconfigure.kernels;

import java.util.List;
import java.util.Map;
import java.util.Objects;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;

import org.jspecify.annotations.Nullable;
import org.springframework.boot.origin.Origin;
import org.springframework.core.io.support.ResourcePatternResolver;

import dev.gpucompute.Backend;
import dev.gpucompute.GpuLauncher;
import dev.gpucompute.KernelSource;
import dev.gpucompute.kernels.KernelDefinition;
import dev.gpucompute.kernels.KernelDefinitionException;
import dev.gpucompute.kernels.KernelFiles;
import dev.gpucompute.kernels.KernelLoadException;
import dev.gpucompute.kernels.LoadedKernels;
import dev.gpucompute.kernels.LoadedKernels.LoadedKernel;

/**
 * The kernels loaded at start-up: every kernel file found under {@code gpu.kernels.locations} and
 * every {@link KernelSource} bean, each loaded (and, for CUDA C on the CUDA backend, compiled) so
 * that a broken kernel fails start-up instead of the first request. With several devices every
 * kernel is loaded on each of them.
 *
 * <p>The convention is the runtime's {@link KernelFiles}: a file {@code <name>.cu}, {@code .ptx},
 * {@code .cubin} or {@code .fatbin} is the kernel {@code <name>}; its parameter types come from a
 * {@link KernelSource} bean of that name (which also supplies the CPU implementation), else a
 * {@code <name>.params} file beside it, else, for CUDA C, its {@code __global__} signature; prebuilt
 * code beside a {@code .cu} is loaded instead of compiling it. What is left here is Spring's part:
 * the locations are resolved with a {@link ResourcePatternResolver} ({@code classpath:} searches every
 * class-path root), and the beans are the sources, known by their bean names ({@code bean 'saxpyKernel'}).
 * Loading is the runtime's {@link LoadedKernels}: on the CUDA backend a bean without CUDA code is
 * left out with a warning; on the CPU backend a kernel without a CPU implementation loads and fails
 * only when launched (logged at start-up).
 *
 * <p>A location the application configured ({@link KernelLocation#configured()}) must exist: a
 * misspelled directory fails start-up with {@link KernelLocationNotFoundException} rather than
 * leaving every kernel unloaded until the first request. The default location may be absent.
 *
 * <p>Immutable once created; thread-safe.
 */
public final class GpuKernels {

	private static final Log logger = LogFactory.getLog(GpuKernels.class);

	private final LoadedKernels loaded;

	private GpuKernels(LoadedKernels loaded) {
		this.loaded = loaded;
	}

	/**
	 * One entry of {@code gpu.kernels.locations}.
	 *
	 * @param location the location: a directory, one file or an Ant pattern, {@code classpath:} or
	 * any other Spring resource prefix
	 * @param configured whether the application configured it (then it must exist) rather than
	 * it being the default
	 * @param origin where it was configured (a file and line, an environment variable), or
	 * {@code null} when unknown
	 */
	public record KernelLocation(String location, boolean configured, @Nullable Origin origin) {

		public KernelLocation {
			Objects.requireNonNull(location, "location");
		}

		/** The default location, which may be absent. */
		public static KernelLocation ofDefault(String location) {
			return new KernelLocation(location, false, null);
		}

		@Override
		public String toString() {
			return (this.origin != null) ? "'" + this.location + "' (" + this.origin + ")" : "'" + this.location + "'";
		}

	}

	/**
	 * Finds the kernel files under {@code locations}, pairs them with the {@link KernelSource}
	 * beans and loads them all through {@code launcher}.
	 * @param launcher the launcher of the context to load into
	 * @param backend the backend the context runs on (for the CPU- and CUDA-implementation checks)
	 * @param locations directories (or patterns) to search; {@code classpath:} searches every
	 * class-path root
	 * @param resolver resolves the locations
	 * @param beans {@link KernelSource} beans by bean name
	 * @throws KernelLocationNotFoundException when a configured location does not exist
	 * @throws KernelDefinitionException when a kernel's definition is incomplete or contradictory
	 * @throws KernelLoadException when the backend cannot load (compile) a kernel
	 */
	public static GpuKernels load(GpuLauncher launcher, Backend backend, List<KernelLocation> locations,
			ResourcePatternResolver resolver, Map<String, KernelSource> beans) {
		return load(List.of(launcher), backend, locations, resolver, beans);
	}

	/**
	 * Like {@link #load(GpuLauncher, Backend, List, ResourcePatternResolver, Map)}, loading every kernel
	 * into each of {@code launchers} (one per device, all on {@code backend}): the files are found and
	 * checked once, then each device loads (compiles) them. {@link #kernels()} are those of the first
	 * launcher; the others have the same names.
	 * @param launchers the launchers of the devices' contexts, the primary device's first
	 * @param backend the backend the contexts run on
	 * @param locations directories (or patterns) to search
	 * @param resolver resolves the locations
	 * @param beans {@link KernelSource} beans by bean name
	 * @throws KernelLocationNotFoundException when a configured location does not exist
	 * @throws KernelDefinitionException when a kernel's definition is incomplete or contradictory
	 * @throws KernelLoadException when the backend cannot load (compile) a kernel on one of the
	 * devices (the origin names the device when there are several)
	 */
	public static GpuKernels load(List<GpuLauncher> launchers, Backend backend, List<KernelLocation> locations,
			ResourcePatternResolver resolver, Map<String, KernelSource> beans) {
		if (launchers.isEmpty()) {
			throw new IllegalArgumentException("At least one launcher is needed");
		}
		KernelFiles files = KernelFiles.of(KernelResources.find(locations, resolver));
		List<KernelDefinition> definitions = files.define(beans, "bean");
		LoadedKernels loaded = LoadedKernels.load(launchers, backend, definitions);
		report(loaded);
		return new GpuKernels(loaded);
	}

	private static void report(LoadedKernels loaded) {
		if (loaded.kernels().isEmpty()) {
			return;
		}
		int count = loaded.kernels().size();
		logger.info("Loaded " + count + " GPU kernel" + ((count == 1) ? "" : "s") + " at start-up"
				+ ((loaded.devices() == 1) ? "" : " on each of " + loaded.devices() + " devices") + ": "
				+ String.join(", ", loaded.kernels().keySet()));
	}

	/**
	 * The kernels loaded at start-up, by name; the handles are the primary device's (with several
	 * devices, every device has loaded the same kernels: {@code context.launcher().kernel(name)}).
	 */
	public Map<String, LoadedKernel> kernels() {
		return this.loaded.kernels();
	}

	/** On how many devices the kernels were loaded. */
	public int devices() {
		return this.loaded.devices();
	}

	/** Where the kernel {@code name} came from, or {@code null} when it was not loaded at start-up. */
	public @Nullable String origin(String name) {
		return this.loaded.origin(name);
	}

	/**
	 * What the runtime loaded: the kernels with their origins, and those the backend cannot run
	 * ({@link LoadedKernels#notLoaded()}: on CUDA, beans without CUDA code).
	 */
	public LoadedKernels loaded() {
		return this.loaded;
	}

	@Override
	public String toString() {
		return "GpuKernels" + this.loaded.kernels().keySet();
	}

}
