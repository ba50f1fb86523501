package dev.gpucompute.autoconfigure.kernels;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;
import java.util.stream.Collectors;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;

import org.springframework.core.io.Resource;
import org.springframework.core.io.support.ResourcePatternResolver;

import dev.gpucompute.Backend;
import dev.gpucompute.GpuLauncher;
import dev.gpucompute.Kernel;
import dev.gpucompute.KernelSource;
import dev.gpucompute.KernelSource.CudaForm;
import dev.gpucompute.ParamType;

/**
 * The kernels loaded at start-up: every kernel file found under {@code gpu.kernels.locations} and
 * every {@link KernelSource} bean, each loaded (and, for CUDA C on the CUDA backend, compiled) so
 * that a broken kernel fails start-up instead of the first request.
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
 * there (logged at start-up).
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

	private GpuKernels(Map<String, LoadedKernel> kernels) {
		this.kernels = kernels;
	}

	/**
	 * Finds the kernel files under {@code locations}, pairs them with the {@link KernelSource}
	 * beans and loads them all through {@code launcher}.
	 * @param launcher the launcher of the context to load into
	 * @param backend the backend the context runs on (for the CPU-implementation check)
	 * @param locations directories (or patterns) to search; {@code classpath:} searches every
	 * class-path root
	 * @param resolver resolves the locations
	 * @param beans {@link KernelSource} beans by bean name
	 * @throws KernelDefinitionException when a kernel's definition is incomplete or contradictory
	 * @throws KernelLoadException when the backend cannot load (compile) a kernel
	 */
	public static GpuKernels load(GpuLauncher launcher, Backend backend, List<String> locations,
			ResourcePatternResolver resolver, Map<String, KernelSource> beans) {
		Map<String, KernelFile> files = findFiles(locations, resolver);
		Map<String, Definition> definitions = new TreeMap<>();
		Map<String, String> beanNames = new LinkedHashMap<>();
		for (Map.Entry<String, KernelSource> bean : beans.entrySet()) {
			String kernelName = bean.getValue().name();
			String other = beanNames.putIfAbsent(kernelName, bean.getKey());
			if (other != null) {
				throw new KernelDefinitionException(kernelName, "beans '" + other + "' and '" + bean.getKey() + "'",
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
		for (Definition definition : definitions.values()) {
			Kernel kernel;
			try {
				kernel = launcher.load(definition.source());
			}
			catch (RuntimeException ex) {
				throw new KernelLoadException(definition.source().name(), definition.origin(), ex);
			}
			loaded.put(kernel.name(), new LoadedKernel(kernel, definition.origin()));
		}
		report(loaded, backend);
		return new GpuKernels(Collections.unmodifiableMap(loaded));
	}

	private static void report(Map<String, LoadedKernel> loaded, Backend backend) {
		if (loaded.isEmpty()) {
			return;
		}
		logger.info("Loaded " + loaded.size() + " GPU kernel" + ((loaded.size() == 1) ? "" : "s") + " at start-up: "
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

	/** The kernels loaded at start-up, by name. */
	public Map<String, LoadedKernel> kernels() {
		return this.kernels;
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

	private static Map<String, KernelFile> findFiles(List<String> locations, ResourcePatternResolver resolver) {
		Map<String, KernelFile> files = new TreeMap<>();
		for (String location : locations) {
			for (String pattern : patterns(location)) {
				Resource[] resources;
				try {
					resources = resolver.getResources(pattern);
				}
				catch (IOException ex) {
					throw new UncheckedIOException("Cannot search " + pattern + " for kernels (gpu.kernels.locations)", ex);
				}
				for (Resource resource : resources) {
					if (!resource.isReadable()) {
						continue;
					}
					KernelFile file = kernelFile(resource);
					KernelFile other = files.putIfAbsent(file.name(), file);
					if (other != null && !sameResource(other.resource(), resource)) {
						KernelFile paired = pairWithPrebuilt(other, file);
						if (paired == null) {
							throw new KernelDefinitionException(file.name(), other.description() + " and " + file.description(),
									"is defined by two kernel files; kernel names must be unique (a .fatbin, .cubin or .ptx "
											+ "beside a .cu of the same name is its prebuilt code)", null);
						}
						files.put(file.name(), paired);
					}
				}
			}
		}
		return files;
	}

	private static List<String> patterns(String location) {
		String base = location.strip();
		String path = base.substring(base.indexOf(':') + 1);
		if (base.startsWith("classpath:")) {
			// Like Flyway's locations: a class-path location is searched in every root, not the first only.
			base = ResourcePatternResolver.CLASSPATH_ALL_URL_PREFIX + path;
		}
		String lower = path.toLowerCase(Locale.ROOT);
		if (path.contains("*") || path.contains("?") || EXTENSIONS.stream().anyMatch((ext) -> lower.endsWith("." + ext))) {
			return List.of(base);
		}
		String directory = base.endsWith("/") ? base : base + "/";
		return EXTENSIONS.stream().map((ext) -> directory + "**/*." + ext).toList();
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
			throw new KernelDefinitionException(name, description, ex.getMessage(), null);
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
			throw new KernelDefinitionException(file.name(), file.description(), "the file name is not a kernel name: "
					+ ex.getMessage() + "; name the file after its extern \"C\" entry point", null);
		}
		byte[] code = read(file);
		List<ParamType> sidecar = sidecarParams(file);
		if (bean != null) {
			String origin = file.description() + " with bean '" + beanName + "'";
			if (sidecar != null && !sidecar.equals(bean.params())) {
				throw new KernelDefinitionException(file.name(), origin, "its .params file declares " + sidecar
						+ " but the bean declares " + bean.params() + "; remove the .params file or make them agree", null);
			}
			if (bean.cudaForm() == null) {
				return new Definition(bean.withCuda(file.form(), code), origin);
			}
			if (bean.cudaForm() == file.form() && Arrays.equals(bean.cudaCode(), code)) {
				return new Definition(bean, origin);
			}
			throw new KernelDefinitionException(file.name(), origin, "has CUDA code both in the bean and in the file, "
					+ "and they differ; leave the CUDA code out of the bean (it is taken from the file)", null);
		}
		List<ParamType> params = sidecar;
		String origin = file.description();
		if (params == null) {
			if (file.form() != CudaForm.SOURCE) {
				throw new KernelDefinitionException(file.name(), origin, "its parameter types are unknown: a "
						+ file.form().name().toLowerCase(Locale.ROOT) + " file does not declare them; add a file '"
						+ file.name() + ".params' beside it (for example 'int, float, buffer, buffer') or a KernelSource "
						+ "bean named '" + file.name() + "' with .params(...)", null);
			}
			try {
				params = KernelSignatures.fromCudaSource(new String(code, StandardCharsets.UTF_8), file.name());
			}
			catch (IllegalArgumentException ex) {
				throw new KernelDefinitionException(file.name(), origin, "its parameter types cannot be read from the "
						+ "source: " + ex.getMessage(), null);
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
			throw new KernelDefinitionException(file.name(), params.getDescription(), ex.getMessage(), null);
		}
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
