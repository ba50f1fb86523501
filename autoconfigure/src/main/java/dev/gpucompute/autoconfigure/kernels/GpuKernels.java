package dev.gpucompute.autoconfigure.kernels;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;
import java.util.stream.Collectors;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;

import org.springframework.boot.origin.Origin;
import org.springframework.core.io.Resource;
import org.springframework.core.io.support.ResourcePatternResolver;

import dev.gpucompute.Backend;
import dev.gpucompute.GpuLauncher;
import dev.gpucompute.Kernel;
import dev.gpucompute.KernelSource;
import dev.gpucompute.KernelSource.CudaForm;
import dev.gpucompute.ParamType;
import dev.gpucompute.spi.Suggestions;

/**
 * The kernels loaded at start-up: every kernel file found under {@code gpu.kernels.locations} and
 * every {@link KernelSource} bean, each loaded (and, for CUDA C on the CUDA backend, compiled) so
 * that a broken kernel fails start-up instead of the first request. With several devices every
 * kernel is loaded on each of them.
 *
 * <p>A kernel file {@code <name>.cu}, {@code .ptx}, {@code .cubin} or {@code .fatbin} is the
 * kernel {@code <name>} (an {@code extern "C"} entry point of that name). Its parameter types come
 * from, in order:
 * <ol>
 * <li>a {@link KernelSource} bean whose {@link KernelSource#name() name} is {@code <name>}; the bean
 * also supplies the CPU implementation, and the file supplies the CUDA code (a bean that has CUDA
 * code of its own must have the same code as the file);</li>
 * <li>a file {@code <name>.params} beside the kernel file, listing the types
 * ({@code int, float, buffer, buffer});</li>
 * <li>for CUDA C source, the signature of {@code __global__ void <name>(...)}.</li>
 * </ol>
 * A PTX, cubin or fatbin file with neither a bean nor a {@code .params} file fails start-up. A
 * {@code <name>.fatbin}, {@code .cubin} or {@code .ptx} in the same directory as {@code <name>.cu}
 * is that source's code compiled ahead of time ({@link KernelSource#prebuilt}): the CUDA backend
 * loads it instead of compiling, and compiles the source only when the driver rejects it. A
 * kernel without a CPU implementation loads on the CPU backend too, and fails only when launched
 * there (logged at start-up). On the CUDA backend, a {@link KernelSource} bean without CUDA code
 * cannot be loaded: it is left out with a warning at start-up.
 *
 * <p>A location the application configured ({@link KernelLocation#configured()}) must exist: a
 * misspelled directory fails start-up with {@link KernelLocationNotFoundException} rather than
 * leaving every kernel unloaded until the first request. The default location may be absent.
 *
 * <p>Immutable once created; thread-safe.
 */
public final class GpuKernels {

	private static final Log logger = LogFactory.getLog(GpuKernels.class);

	private static final List<String> EXTENSIONS = List.of("cu", "ptx", "cubin", "fatbin");

	/**
	 * A kernel loaded at start-up.
	 *
	 * @param kernel the loaded kernel
	 * @param origin where it came from: a kernel file, a bean, or both
	 */
	public record LoadedKernel(Kernel kernel, String origin) {

		public String name() {
			return this.kernel.name();
		}

	}

	private final Map<String, LoadedKernel> kernels;

	private final int devices;

	private GpuKernels(Map<String, LoadedKernel> kernels, int devices) {
		this.kernels = kernels;
		this.devices = devices;
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
	public record KernelLocation(String location, boolean configured, Origin origin) {

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
		Map<String, KernelFile> files = findFiles(locations, resolver);
		Map<String, Definition> definitions = new TreeMap<>();
		Map<String, String> beanNames = new LinkedHashMap<>();
		for (Map.Entry<String, KernelSource> bean : beans.entrySet()) {
			String kernelName = bean.getValue().name();
			String other = beanNames.putIfAbsent(kernelName, bean.getKey());
			if (other != null) {
				throw new KernelDefinitionException(KernelDefinitionException.Kind.DUPLICATE_BEANS, kernelName,
						"beans '" + other + "' and '" + bean.getKey() + "'",
						"is defined by two KernelSource beans; kernel names must be unique", null);
			}
		}
		for (KernelFile file : files.values()) {
			String beanName = beanNames.remove(file.name());
			KernelSource bean = (beanName != null) ? beans.get(beanName) : null;
			definitions.put(file.name(), define(file, beanName, bean));
		}
		for (Map.Entry<String, String> entry : beanNames.entrySet()) {
			definitions.put(entry.getKey(), new Definition(beans.get(entry.getValue()), "bean '" + entry.getValue() + "'"));
		}
		Map<String, LoadedKernel> loaded = new LinkedHashMap<>();
		List<String> withoutCuda = new ArrayList<>();
		for (Definition definition : definitions.values()) {
			if (backend == Backend.CUDA && definition.source().cudaForm() == null) {
				// The CUDA backend cannot load a kernel that has only a CPU implementation.
				withoutCuda.add(definition.source().name() + " (" + definition.origin() + ")");
				continue;
			}
			Kernel first = null;
			for (GpuLauncher launcher : launchers) {
				Kernel kernel;
				try {
					kernel = launcher.load(definition.source());
				}
				catch (RuntimeException ex) {
					String origin = (launchers.size() == 1) ? definition.origin()
							: definition.origin() + ", on device " + launcher.context().device().ordinal();
					throw new KernelLoadException(definition.source().name(), origin, ex);
				}
				if (first == null) {
					first = kernel;
				}
			}
			loaded.put(first.name(), new LoadedKernel(first, definition.origin()));
		}
		report(loaded, backend, launchers.size());
		if (!withoutCuda.isEmpty()) {
			logger.warn("Kernels without CUDA code cannot run on the CUDA backend and were not loaded: "
					+ String.join(", ", withoutCuda) + ". Put a '<name>.cu' (or .ptx, .cubin, .fatbin) file under "
					+ "gpu.kernels.locations, or give the KernelSource bean .cuda(...) or .cudaResource(...)");
		}
		return new GpuKernels(Collections.unmodifiableMap(loaded), launchers.size());
	}

	private static void report(Map<String, LoadedKernel> loaded, Backend backend, int devices) {
		if (loaded.isEmpty()) {
			return;
		}
		logger.info("Loaded " + loaded.size() + " GPU kernel" + ((loaded.size() == 1) ? "" : "s") + " at start-up"
				+ ((devices == 1) ? "" : " on each of " + devices + " devices") + ": "
				+ String.join(", ", loaded.keySet()));
		if (backend == Backend.CPU) {
			List<String> cudaOnly = loaded.values()
				.stream()
				.filter((kernel) -> kernel.kernel().source().cpu() == null)
				.map((kernel) -> kernel.name() + " (" + kernel.origin() + ")")
				.toList();
			if (!cudaOnly.isEmpty()) {
				logger.warn("Kernels without a CPU implementation load on the CPU backend but fail when launched: "
						+ String.join(", ", cudaOnly) + ". Add a KernelSource bean of the same name with .cpu(...)");
			}
		}
	}

	/**
	 * The kernels loaded at start-up, by name; the handles are the primary device's (with several
	 * devices, every device has loaded the same kernels: {@code context.launcher().kernel(name)}).
	 */
	public Map<String, LoadedKernel> kernels() {
		return this.kernels;
	}

	/** On how many devices the kernels were loaded. */
	public int devices() {
		return this.devices;
	}

	/** Where the kernel {@code name} came from, or {@code null} when it was not loaded at start-up. */
	public String origin(String name) {
		LoadedKernel kernel = this.kernels.get(name);
		return (kernel != null) ? kernel.origin() : null;
	}

	// ---- finding files ---------------------------------------------------------------------

	private record KernelFile(String name, Resource resource, CudaForm form, String description, Resource prebuilt,
			CudaForm prebuiltForm) {

		KernelFile(String name, Resource resource, CudaForm form, String description) {
			this(name, resource, form, description, null, null);
		}

	}

	/** Preference among prebuilt forms beside a {@code .cu}: a fatbin, then a cubin, then PTX. */
	private static final List<CudaForm> PREBUILT_ORDER = List.of(CudaForm.FATBIN, CudaForm.CUBIN, CudaForm.PTX);

	private record Definition(KernelSource source, String origin) {
	}

	private static Map<String, KernelFile> findFiles(List<KernelLocation> locations, ResourcePatternResolver resolver) {
		Map<String, KernelFile> files = new TreeMap<>();
		for (KernelLocation location : locations) {
			int found = 0;
			for (String pattern : patterns(location.location())) {
				for (Resource resource : resources(resolver, pattern)) {
					if (!resource.isReadable() || isParamsFile(resource)) {
						continue;
					}
					found++;
					KernelFile file = kernelFile(resource);
					KernelFile other = files.putIfAbsent(file.name(), file);
					if (other != null && !sameResource(other.resource(), resource)) {
						KernelFile paired = pairWithPrebuilt(other, file);
						if (paired == null) {
							throw new KernelDefinitionException(KernelDefinitionException.Kind.DUPLICATE_FILES, file.name(),
									other.description() + " and " + file.description(),
									"is defined by two kernel files; kernel names must be unique (a .fatbin, .cubin or .ptx "
											+ "beside a .cu of the same name is its prebuilt code)", null);
						}
						files.put(file.name(), paired);
					}
				}
			}
			if (found == 0 && location.configured()) {
				if (!exists(location.location(), resolver)) {
					List<String> nearby = kernelDirectoriesNear(location.location(), resolver);
					throw new KernelLocationNotFoundException(location, nearby, likelyMeant(location.location(), nearby));
				}
				logger.warn("gpu.kernels.locations entry " + location + " has no kernel files (.cu, .ptx, .cubin, .fatbin)");
			}
		}
		return files;
	}

	private static Resource[] resources(ResourcePatternResolver resolver, String pattern) {
		try {
			return resolver.getResources(pattern);
		}
		catch (java.io.FileNotFoundException ex) {
			// A pattern whose fixed part does not exist (a missing jar or directory): nothing found.
			return new Resource[0];
		}
		catch (IOException ex) {
			throw new UncheckedIOException("Cannot search " + pattern + " for kernels (gpu.kernels.locations)", ex);
		}
	}

	private static boolean isParamsFile(Resource resource) {
		String name = resource.getFilename();
		return name != null && name.endsWith(".params");
	}

	/**
	 * Whether a location that matched no kernel file exists at all: a directory that is there but
	 * empty is a location the application may fill later, a directory that is not there is a
	 * typo.
	 */
	private static boolean exists(String location, ResourcePatternResolver resolver) {
		String directory = directory(location);
		if (directory == null) {
			return false; // one file or a pattern, which matched nothing
		}
		for (Resource resource : resources(resolver, directory)) {
			if (resource.exists()) {
				return true;
			}
		}
		return false;
	}

	/**
	 * Directories near a missing location that hold kernel files: those under its parent
	 * directory, written as locations with the same prefix, the ones whose names are closest to the
	 * missing one first, so that a misspelling can be spotted.
	 */
	static List<String> kernelDirectoriesNear(String location, ResourcePatternResolver resolver) {
		String base = location.strip();
		int colon = base.indexOf(':');
		String prefix = (colon >= 0) ? base.substring(0, colon + 1) : "";
		String path = base.substring(colon + 1);
		int wildcard = indexOfWildcard(path);
		String fixed = (wildcard >= 0) ? path.substring(0, wildcard) : path;
		String trimmed = fixed.endsWith("/") ? fixed.substring(0, fixed.length() - 1) : fixed;
		int slash = trimmed.lastIndexOf('/');
		if (slash <= 0) {
			// No parent to look in below the root: scanning a whole class path is too costly for a hint.
			return List.of();
		}
		String parent = trimmed.substring(0, slash + 1);
		String missing = trimmed.substring(slash + 1);
		String searchPrefix = prefix.equals("classpath:") ? ResourcePatternResolver.CLASSPATH_ALL_URL_PREFIX : prefix;
		// The parent directory in each class-path root: kernel files are named relative to these.
		List<String> roots = new ArrayList<>();
		for (Resource root : resources(resolver, searchPrefix + parent)) {
			String url = url(root);
			if (url != null) {
				roots.add(url.endsWith("/") ? url : url + "/");
			}
		}
		Set<String> directories = new LinkedHashSet<>();
		for (String ext : EXTENSIONS) {
			for (Resource resource : resources(resolver, searchPrefix + parent + "**/*." + ext)) {
				String url = url(resource);
				for (String root : roots) {
					if (url != null && url.startsWith(root)) {
						String relative = url.substring(root.length());
						directories.add(prefix + parent + relative.substring(0, relative.lastIndexOf('/') + 1));
						break;
					}
				}
			}
		}
		return directories.stream()
			.sorted(java.util.Comparator
				.comparingInt((String directory) -> Suggestions.distance(missing, firstSegment(directory, prefix + parent)))
				.thenComparing(java.util.Comparator.naturalOrder()))
			.limit(5)
			.toList();
	}

	/**
	 * The one nearby directory that looks like what a misspelled location meant: a sibling whose
	 * name is at most two edits away, or {@code null}.
	 */
	static String likelyMeant(String location, List<String> nearby) {
		if (nearby.isEmpty()) {
			return null;
		}
		String trimmed = location.strip().endsWith("/") ? location.strip().substring(0, location.strip().length() - 1)
				: location.strip();
		int slash = trimmed.lastIndexOf('/');
		String parent = trimmed.substring(0, slash + 1);
		String missing = trimmed.substring(slash + 1);
		String first = nearby.get(0);
		return (first.startsWith(parent) && Suggestions.distance(missing, firstSegment(first, parent)) <= 2) ? first : null;
	}

	private static String firstSegment(String directory, String parent) {
		String rest = directory.startsWith(parent) ? directory.substring(parent.length()) : directory;
		int slash = rest.indexOf('/');
		return (slash >= 0) ? rest.substring(0, slash) : rest;
	}

	private static String url(Resource resource) {
		try {
			return resource.getURL().toString();
		}
		catch (IOException ex) {
			return null;
		}
	}

	private static int indexOfWildcard(String path) {
		int star = path.indexOf('*');
		int question = path.indexOf('?');
		if (star < 0) {
			return question;
		}
		return (question < 0) ? star : Math.min(star, question);
	}

	private static List<String> patterns(String location) {
		String directory = directory(location);
		if (directory == null) {
			return List.of(searchBase(location));
		}
		return EXTENSIONS.stream().map((ext) -> directory + "**/*." + ext).toList();
	}

	/** The location with a {@code classpath:} prefix widened to every class-path root. */
	private static String searchBase(String location) {
		String base = location.strip();
		if (base.startsWith("classpath:")) {
			// Like Flyway's locations: a class-path location is searched in every root, not the first only.
			return ResourcePatternResolver.CLASSPATH_ALL_URL_PREFIX + base.substring("classpath:".length());
		}
		return base;
	}

	/**
	 * The directory a location names, ending with a slash, or {@code null} when it names one file or
	 * is a pattern.
	 */
	private static String directory(String location) {
		String base = searchBase(location);
		String path = base.substring(base.indexOf(':') + 1);
		String lower = path.toLowerCase(Locale.ROOT);
		if (path.contains("*") || path.contains("?") || EXTENSIONS.stream().anyMatch((ext) -> lower.endsWith("." + ext))) {
			return null;
		}
		return base.endsWith("/") ? base : base + "/";
	}

	private static KernelFile kernelFile(Resource resource) {
		String fileName = Objects.requireNonNull(resource.getFilename(), "file name");
		String name = fileName.substring(0, fileName.lastIndexOf('.'));
		String description = resource.getDescription();
		CudaForm form;
		try {
			form = KernelSource.formOf(fileName);
		}
		catch (IllegalArgumentException ex) {
			throw new KernelDefinitionException(KernelDefinitionException.Kind.NOT_A_KERNEL_FILE, name, description,
					ex.getMessage(), null);
		}
		return new KernelFile(name, resource, form, description);
	}

	/**
	 * A {@code .cu} with the prebuilt code beside it, when one of {@code a} and {@code b} is a
	 * {@code .cu} (possibly paired already) and the other prebuilt code in the same directory;
	 * otherwise {@code null}.
	 */
	private static KernelFile pairWithPrebuilt(KernelFile a, KernelFile b) {
		KernelFile source = (a.form() == CudaForm.SOURCE) ? a : b;
		KernelFile prebuilt = (source == a) ? b : a;
		if (source.form() != CudaForm.SOURCE || prebuilt.form() == CudaForm.SOURCE || prebuilt.prebuilt() != null) {
			return null;
		}
		try {
			Resource sibling = source.resource().createRelative(Objects.requireNonNull(prebuilt.resource().getFilename()));
			if (!sameResource(sibling, prebuilt.resource())) {
				return null;
			}
		}
		catch (IOException | RuntimeException ex) {
			return null;
		}
		if (source.prebuilt() != null
				&& PREBUILT_ORDER.indexOf(source.prebuiltForm()) <= PREBUILT_ORDER.indexOf(prebuilt.form())) {
			return source;
		}
		return new KernelFile(source.name(), source.resource(), source.form(), source.description(), prebuilt.resource(),
				prebuilt.form());
	}

	private static boolean sameResource(Resource a, Resource b) {
		try {
			return a.getURI().equals(b.getURI());
		}
		catch (IOException ex) {
			return false;
		}
	}

	// ---- pairing files with beans ----------------------------------------------------------

	private static Definition define(KernelFile file, String beanName, KernelSource bean) {
		Definition definition = defineWithoutPrebuilt(file, beanName, bean);
		if (file.prebuilt() == null) {
			return definition;
		}
		byte[] image;
		try (InputStream in = file.prebuilt().getInputStream()) {
			image = in.readAllBytes();
		}
		catch (IOException ex) {
			throw new UncheckedIOException("Cannot read kernel file " + file.prebuilt().getDescription(), ex);
		}
		return new Definition(definition.source().prebuilt(file.prebuiltForm(), image),
				definition.origin() + " with prebuilt " + file.prebuilt().getFilename());
	}

	private static Definition defineWithoutPrebuilt(KernelFile file, String beanName, KernelSource bean) {
		KernelSource named;
		try {
			named = KernelSource.named(file.name());
		}
		catch (IllegalArgumentException ex) {
			throw new KernelDefinitionException(KernelDefinitionException.Kind.INVALID_NAME, file.name(),
					file.description(), "the file name is not a kernel name: " + ex.getMessage()
							+ "; name the file after its extern \"C\" entry point",
					KernelNames.identifierFor(file.name()) + "." + extension(file), null);
		}
		byte[] code = read(file);
		List<ParamType> sidecar = sidecarParams(file);
		if (bean != null) {
			String origin = file.description() + " with bean '" + beanName + "'";
			if (sidecar != null && !sidecar.equals(bean.params())) {
				throw new KernelDefinitionException(KernelDefinitionException.Kind.PARAMS_CONTRADICT_BEAN, file.name(),
						origin, "its .params file declares " + sidecar + " but the bean declares " + bean.params()
								+ "; remove the .params file or make them agree",
						null);
			}
			if (bean.cudaForm() == null) {
				return new Definition(bean.withCuda(file.form(), code), origin);
			}
			if (bean.cudaForm() == file.form() && Arrays.equals(bean.cudaCode(), code)) {
				return new Definition(bean, origin);
			}
			throw new KernelDefinitionException(KernelDefinitionException.Kind.CUDA_CODE_CONTRADICTS_BEAN, file.name(),
					origin, "has CUDA code both in the bean and in the file, and they differ; leave the CUDA code out of "
							+ "the bean (it is taken from the file)",
					null);
		}
		List<ParamType> params = sidecar;
		String origin = file.description();
		if (params == null) {
			if (file.form() != CudaForm.SOURCE) {
				throw new KernelDefinitionException(KernelDefinitionException.Kind.UNKNOWN_PARAMETER_TYPES, file.name(),
						origin, "its parameter types are unknown: a " + file.form().name().toLowerCase(Locale.ROOT)
								+ " file does not declare them; add a file '" + file.name() + ".params' beside it (for "
								+ "example 'int, float, buffer, buffer') or a KernelSource bean named '" + file.name()
								+ "' with .params(...)",
						null);
			}
			try {
				params = KernelSignatures.fromCudaSource(new String(code, StandardCharsets.UTF_8), file.name());
			}
			catch (KernelSignatures.SignatureException ex) {
				List<String> defined = ex.definedFunctions();
				String suggestion = (defined.size() == 1) ? defined.get(0) + ".cu" : null;
				throw new KernelDefinitionException(ex.kind(), file.name(), origin,
						"its parameter types cannot be read from the source: " + ex.getMessage(), suggestion, null);
			}
		}
		return new Definition(named.params(params.toArray(new ParamType[0])).withCuda(file.form(), code), origin);
	}

	private static List<ParamType> sidecarParams(KernelFile file) {
		Resource params;
		try {
			params = file.resource().createRelative(file.name() + ".params");
		}
		catch (IOException ex) {
			return null;
		}
		if (!params.exists()) {
			return null;
		}
		try (InputStream in = params.getInputStream()) {
			return KernelSignatures.fromParamsFile(new String(in.readAllBytes(), StandardCharsets.UTF_8));
		}
		catch (IOException ex) {
			throw new UncheckedIOException("Cannot read " + params.getDescription(), ex);
		}
		catch (IllegalArgumentException ex) {
			throw new KernelDefinitionException(KernelDefinitionException.Kind.INVALID_PARAMS_FILE, file.name(),
					params.getDescription(), ex.getMessage(), null);
		}
	}

	private static String extension(KernelFile file) {
		String fileName = Objects.requireNonNull(file.resource().getFilename(), "file name");
		return fileName.substring(fileName.lastIndexOf('.') + 1);
	}

	private static byte[] read(KernelFile file) {
		try (InputStream in = file.resource().getInputStream()) {
			return in.readAllBytes();
		}
		catch (IOException ex) {
			throw new UncheckedIOException("Cannot read kernel file " + file.description(), ex);
		}
	}

	@Override
	public String toString() {
		return "GpuKernels" + this.kernels.values().stream().map(LoadedKernel::name).collect(Collectors.toList());
	}

}
