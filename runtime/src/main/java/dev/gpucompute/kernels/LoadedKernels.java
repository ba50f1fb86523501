package dev.gpucompute.kernels;

import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import dev.gpucompute.Backend;
import dev.gpucompute.GpuLauncher;
import dev.gpucompute.Kernel;

/**
 * Kernels {@link KernelFiles#define defined} from files and sources, loaded into one context or
 * into each context of several devices, with where each came from. Loading them all before work
 * starts keeps requests fast: on CUDA a load waits for all the work in flight on the device, and
 * compiling CUDA C takes tens of milliseconds per kernel.
 *
 * <p>What the backend cannot run is decided here, the same way whatever loads the kernels: on the
 * CUDA backend a kernel without CUDA code (a source with only a CPU implementation) is not loaded,
 * and is listed in {@link #notLoaded()}; on the CPU backend a kernel without a CPU implementation is
 * loaded, and fails only when launched. Both are logged at WARN (logger
 * {@code dev.gpucompute.kernels.LoadedKernels}), naming each kernel and its origin.
 *
 * <p>Immutable once loaded; thread-safe. The kernels belong to their contexts, which unload them
 * when they close.
 */
public final class LoadedKernels {

	private static final Logger logger = LoggerFactory.getLogger(LoadedKernels.class);

	/**
	 * A loaded kernel.
	 *
	 * @param kernel the loaded kernel (the first context's, with several)
	 * @param origin where it came from ({@link KernelDefinition#origin()})
	 */
	public record LoadedKernel(Kernel kernel, String origin) {

		public LoadedKernel {
			Objects.requireNonNull(kernel, "kernel");
			Objects.requireNonNull(origin, "origin");
		}

		/** The kernel's name. */
		public String name() {
			return this.kernel.name();
		}

	}

	private final Map<String, LoadedKernel> kernels;

	private final List<KernelDefinition> notLoaded;

	private final int devices;

	private LoadedKernels(Map<String, LoadedKernel> kernels, List<KernelDefinition> notLoaded, int devices) {
		this.kernels = kernels;
		this.notLoaded = notLoaded;
		this.devices = devices;
	}

	/**
	 * Loads {@code definitions} into the context of {@code launcher}, on the backend it runs on.
	 * @throws KernelLoadException when the backend cannot load (compile) a kernel; kernels loaded
	 * before it stay loaded in the context
	 */
	public static LoadedKernels load(GpuLauncher launcher, Collection<KernelDefinition> definitions) {
		Objects.requireNonNull(launcher, "launcher");
		return load(List.of(launcher), launcher.context().backend(), definitions);
	}

	/**
	 * Loads every one of {@code definitions} into each of {@code launchers} (one per device, all on
	 * {@code backend}), in order. {@link #kernels()} are the first launcher's; the others have the
	 * same names.
	 * @param launchers the launchers of the devices' contexts, the primary device's first
	 * @param backend the backend the contexts run on: it decides which kernels can be loaded
	 * @param definitions the kernels, as {@link KernelFiles#define} gives them
	 * @throws KernelLoadException when the backend cannot load (compile) a kernel on one of the
	 * devices (with several, the origin names the device); kernels loaded before it stay loaded
	 */
	public static LoadedKernels load(List<GpuLauncher> launchers, Backend backend,
			Collection<KernelDefinition> definitions) {
		Objects.requireNonNull(launchers, "launchers");
		Objects.requireNonNull(backend, "backend");
		Objects.requireNonNull(definitions, "definitions");
		if (launchers.isEmpty()) {
			throw new IllegalArgumentException("At least one launcher is needed");
		}
		Map<String, LoadedKernel> loaded = new LinkedHashMap<>();
		List<KernelDefinition> notLoaded = new ArrayList<>();
		for (KernelDefinition definition : definitions) {
			if (backend == Backend.CUDA && definition.source().cudaForm() == null) {
				notLoaded.add(definition);
				continue;
			}
			Kernel first = load(launchers.get(0), definition, launchers.size());
			for (GpuLauncher launcher : launchers.subList(1, launchers.size())) {
				load(launcher, definition, launchers.size());
			}
			loaded.put(first.name(), new LoadedKernel(first, definition.origin()));
		}
		LoadedKernels result = new LoadedKernels(Collections.unmodifiableMap(loaded), List.copyOf(notLoaded),
				launchers.size());
		result.warn(backend);
		return result;
	}

	private static Kernel load(GpuLauncher launcher, KernelDefinition definition, int devices) {
		try {
			return launcher.load(definition.source());
		}
		catch (RuntimeException ex) {
			String origin = (devices == 1) ? definition.origin()
					: definition.origin() + ", on device " + launcher.context().device().ordinal();
			throw new KernelLoadException(definition.name(), origin, ex);
		}
	}

	private void warn(Backend backend) {
		if (!this.notLoaded.isEmpty()) {
			logger.warn("Kernels without CUDA code cannot run on the CUDA backend and were not loaded: {}. Give each "
					+ "CUDA code: a '<name>.cu' (or .ptx, .cubin, .fatbin) kernel file, or .cuda(...) or .cudaResource(...) "
					+ "on its KernelSource", String.join(", ",
							this.notLoaded.stream().map((kernel) -> kernel.name() + " (" + kernel.origin() + ")").toList()));
		}
		if (backend == Backend.CPU) {
			List<String> cudaOnly = this.kernels.values()
				.stream()
				.filter((kernel) -> kernel.kernel().source().cpu() == null)
				.map((kernel) -> kernel.name() + " (" + kernel.origin() + ")")
				.toList();
			if (!cudaOnly.isEmpty()) {
				logger.warn("Kernels without a CPU implementation load on the CPU backend but fail when launched: {}. "
						+ "Give each a KernelSource of the same name with .cpu(...)", String.join(", ", cudaOnly));
			}
		}
	}

	/**
	 * The loaded kernels by name, in the order of the definitions; the handles are the first
	 * launcher's (the others have loaded the same kernels: {@code launcher.kernel(name)}).
	 */
	public Map<String, LoadedKernel> kernels() {
		return this.kernels;
	}

	/**
	 * The kernels the backend cannot run and which were therefore not loaded: on CUDA, those
	 * without CUDA code. Empty on the CPU backend.
	 */
	public List<KernelDefinition> notLoaded() {
		return this.notLoaded;
	}

	/** Into how many contexts (devices) the kernels were loaded. */
	public int devices() {
		return this.devices;
	}

	/** Where the kernel {@code name} came from, or {@code null} when it is not among these. */
	public @Nullable String origin(String name) {
		LoadedKernel kernel = this.kernels.get(name);
		return (kernel != null) ? kernel.origin() : null;
	}

	@Override
	public String toString() {
		return "LoadedKernels" + this.kernels.keySet();
	}

}
