package dev.gpucompute.kernels;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;
import java.util.stream.Stream;

import dev.gpucompute.KernelSource;
import dev.gpucompute.KernelSource.CudaForm;
import dev.gpucompute.ParamType;
import dev.gpucompute.spi.Suggestions;
import org.jspecify.annotations.Nullable;

/**
 * Kernel files and the kernels they define: the convention by which a directory of {@code .cu},
 * {@code .ptx}, {@code .cubin} and {@code .fatbin} files becomes {@link KernelSource}s. The Spring
 * starter reads {@code gpu.kernels.locations} with it; an application without Spring, or a test,
 * scans a directory and loads what it defines before work starts:
 *
 * <pre>{@code
 * List<KernelDefinition> kernels = KernelFiles.scan(Path.of("kernels")).define(List.of(saxpyOnTheCpu));
 * LoadedKernels loaded = LoadedKernels.load(context.launcher(), kernels);
 * }</pre>
 *
 * <p>A file {@code <name>.cu}, {@code .ptx}, {@code .cubin} or {@code .fatbin} is the kernel
 * {@code <name>}: its {@code extern "C"} entry point, so {@code <name>} must be a C identifier. Its
 * parameter types come from, in order:
 * <ol>
 * <li>a {@link KernelSource} of that name given to {@link #define(Collection)} (with Spring: a
 * {@code KernelSource} bean); it also supplies the CPU implementation, and the file supplies the
 * CUDA code (a source that has CUDA code of its own must have the same code as the file);</li>
 * <li>a file {@code <name>.params} beside the kernel file, listing the types
 * ({@code int, float, buffer, buffer}; {@code #} starts a comment);</li>
 * <li>for CUDA C source, the signature of {@code __global__ void <name>(...)}: pointers are
 * {@code BUFFER}; {@code int}, {@code unsigned}, {@code int32_t} are {@code INT}; {@code long},
 * {@code long long}, {@code size_t}, {@code int64_t} are {@code LONG}; {@code float} and
 * {@code double} are themselves.</li>
 * </ol>
 * A PTX, cubin or fatbin file with neither a source nor a {@code .params} file is an error. A
 * {@code <name>.fatbin}, {@code .cubin} or {@code .ptx} in the same directory as {@code <name>.cu} is
 * that source's code compiled ahead of time ({@link KernelSource#prebuilt}; a fatbin is preferred,
 * then a cubin, then PTX). Given sources without a file are defined too (CPU-only kernels, inline CUDA
 * code). Every problem (a file name that is not a C identifier, no such entry point, a parameter
 * type the launcher cannot pass, two files or two sources for one kernel, a {@code .params} file
 * that names an unknown type or contradicts the source) is a {@link KernelDefinitionException}
 * naming the kernel, its origin and its {@link KernelDefinitionException.Kind kind}.
 *
 * <p>Immutable; thread-safe. Creating one reads file names only (and looks for prebuilt code beside
 * each {@code .cu}); {@link #define} reads the files, each time it is called.
 */
public final class KernelFiles {

	/** The extensions of kernel files, without the dot: CUDA C source, PTX, cubin, fatbin. */
	public static final List<String> EXTENSIONS = List.of("cu", "ptx", "cubin", "fatbin");

	/** What the sources given to {@link #define(Collection)} are called in origins and messages. */
	private static final String KERNEL_SOURCE = "KernelSource";

	/** Preference among prebuilt forms beside a {@code .cu}: a fatbin, then a cubin, then PTX. */
	private static final List<CudaForm> PREBUILT_ORDER = List.of(CudaForm.FATBIN, CudaForm.CUBIN, CudaForm.PTX);

	/** Nearby directories named in a missing location's error, at most. */
	private static final int NEARBY = 5;

	/** How deep below a nearby directory kernel files are looked for. */
	private static final int NEARBY_DEPTH = 4;

	private final Map<String, Entry> entries;

	private KernelFiles(Map<String, Entry> entries) {
		this.entries = entries;
	}

	/** One kernel's file, with the prebuilt code found beside it (a {@code .cu}'s only). */
	private record Entry(String name, KernelFile file, CudaForm form, @Nullable KernelFile prebuilt,
			@Nullable CudaForm prebuiltForm) {

		Entry(String name, KernelFile file, CudaForm form) {
			this(name, file, form, null, null);
		}

	}

	/**
	 * The kernel files among {@code files}, found by any search (the Spring starter's resource
	 * patterns, a directory walk). {@code .params} files are skipped: they are read as the sidecars
	 * of the kernel files beside them. A file found twice ({@link KernelFile#sameFile}) counts once.
	 * @throws KernelDefinitionException when a file is not a kernel file
	 * ({@link KernelDefinitionException.Kind#NOT_A_KERNEL_FILE}) or two files are the same kernel
	 * ({@link KernelDefinitionException.Kind#DUPLICATE_FILES}; a {@code .fatbin}, {@code .cubin} or
	 * {@code .ptx} beside a {@code .cu} of the same name is its prebuilt code, not a duplicate)
	 */
	public static KernelFiles of(Collection<? extends KernelFile> files) {
		Objects.requireNonNull(files, "files");
		Map<String, Entry> entries = new TreeMap<>();
		for (KernelFile file : files) {
			Objects.requireNonNull(file, "file");
			if (isParamsFile(fileName(file))) {
				continue;
			}
			Entry entry = entry(file);
			Entry other = entries.putIfAbsent(entry.name(), entry);
			if (other != null && !other.file().sameFile(file)) {
				Entry paired = pairWithPrebuilt(other, entry);
				if (paired == null) {
					throw new KernelDefinitionException(KernelDefinitionException.Kind.DUPLICATE_FILES, entry.name(),
							other.file().description() + " and " + file.description(),
							"is defined by two kernel files; kernel names must be unique (a .fatbin, .cubin or .ptx "
									+ "beside a .cu of the same name is its prebuilt code)",
							null);
				}
				entries.put(entry.name(), paired);
			}
		}
		return new KernelFiles(Collections.unmodifiableMap(entries));
	}

	/**
	 * The kernel files at {@code locations}: each a directory, searched recursively for {@code .cu},
	 * {@code .ptx}, {@code .cubin} and {@code .fatbin} files, or one kernel file. An empty directory
	 * gives no kernels.
	 * @throws NoSuchFileException when a location does not exist; the message names the directories
	 * (or kernel files) beside it whose names are closest, and the one it looks like a misspelling of
	 * @throws IOException when a directory cannot be read
	 * @throws KernelDefinitionException as {@link #of}
	 */
	public static KernelFiles scan(Path... locations) throws IOException {
		Objects.requireNonNull(locations, "locations");
		List<KernelFile> files = new ArrayList<>();
		for (Path location : locations) {
			Objects.requireNonNull(location, "location");
			if (Files.isRegularFile(location)) {
				files.add(KernelFile.of(location));
			}
			else if (Files.isDirectory(location)) {
				try (Stream<Path> walk = Files.walk(location)) {
					walk.filter(Files::isRegularFile)
						.filter((path) -> isKernelFile(path.getFileName().toString()))
						.sorted()
						.forEach((path) -> files.add(KernelFile.of(path)));
				}
			}
			else {
				throw notFound(location);
			}
		}
		return of(files);
	}

	/** The kernels' names, sorted. */
	public Set<String> names() {
		return this.entries.keySet();
	}

	/** Whether there are no kernel files. */
	public boolean isEmpty() {
		return this.entries.isEmpty();
	}

	/**
	 * The kernels of the files alone, sorted by name.
	 * @throws KernelDefinitionException when a kernel's definition is incomplete or contradictory
	 * @throws UncheckedIOException when a file cannot be read
	 */
	public List<KernelDefinition> define() {
		return define(Map.of(), KERNEL_SOURCE);
	}

	/**
	 * The kernels of the files paired with {@code sources} by name, and the sources without a file,
	 * sorted by name. A source's origin reads {@code KernelSource 'saxpy'}.
	 * @param sources kernels given in code: the CPU implementations (and parameter types) of kernel
	 * files, and kernels of their own
	 * @throws KernelDefinitionException when two sources have the same name, or a kernel's
	 * definition is incomplete or contradictory
	 * @throws UncheckedIOException when a file cannot be read
	 */
	public List<KernelDefinition> define(Collection<KernelSource> sources) {
		Objects.requireNonNull(sources, "sources");
		Map<String, KernelSource> byName = new LinkedHashMap<>();
		for (KernelSource source : sources) {
			Objects.requireNonNull(source, "source");
			if (byName.putIfAbsent(source.name(), source) != null) {
				throw new KernelDefinitionException(KernelDefinitionException.Kind.DUPLICATE_SOURCES, source.name(),
						"two KernelSources named '" + source.name() + "'",
						"is given twice; kernel names must be unique", null);
			}
		}
		return define(byName, KERNEL_SOURCE);
	}

	/**
	 * Like {@link #define(Collection)}, with each source known by an identifier of its own, such as
	 * a Spring bean name, which origins and messages use.
	 * @param sources the sources by identifier
	 * @param kind what the sources are, for origins and messages: {@code "bean"} gives the origin
	 * {@code bean 'saxpyKernel'} and errors such as "the bean declares [INT, FLOAT]"
	 * @throws KernelDefinitionException when two sources have the same kernel name
	 * ({@code beans 'one' and 'two'}), or a kernel's definition is incomplete or contradictory
	 * @throws UncheckedIOException when a file cannot be read
	 */
	public List<KernelDefinition> define(Map<String, KernelSource> sources, String kind) {
		Objects.requireNonNull(sources, "sources");
		Objects.requireNonNull(kind, "kind");
		Map<String, String> ids = new LinkedHashMap<>();
		for (Map.Entry<String, KernelSource> source : sources.entrySet()) {
			String kernelName = Objects.requireNonNull(source.getValue(), "source").name();
			String other = ids.putIfAbsent(kernelName, source.getKey());
			if (other != null) {
				throw new KernelDefinitionException(KernelDefinitionException.Kind.DUPLICATE_SOURCES, kernelName,
						kind + "s '" + other + "' and '" + source.getKey() + "'",
						"is defined by two " + sourceWord(kind) + "s; kernel names must be unique", null);
			}
		}
		Map<String, KernelDefinition> definitions = new TreeMap<>();
		for (Entry entry : this.entries.values()) {
			String id = ids.remove(entry.name());
			definitions.put(entry.name(), define(entry, kind, id, (id != null) ? sources.get(id) : null));
		}
		// Every id left is a key of sources, whose values were checked above.
		ids.forEach((name, id) -> definitions.put(name,
				new KernelDefinition(Objects.requireNonNull(sources.get(id)), kind + " '" + id + "'")));
		return List.copyOf(definitions.values());
	}

	/** Whether {@code fileName} is a kernel file's: {@code .cu}, {@code .ptx}, {@code .cubin} or {@code .fatbin}, in any case. */
	public static boolean isKernelFile(String fileName) {
		String lower = fileName.toLowerCase(Locale.ROOT);
		return EXTENSIONS.stream().anyMatch((ext) -> lower.endsWith("." + ext));
	}

	/** Whether {@code fileName} is a {@code .params} file: a kernel file's parameter types. */
	public static boolean isParamsFile(String fileName) {
		return fileName.endsWith(".params");
	}

	// ---- files ----------------------------------------------------------------------------

	private static String fileName(KernelFile file) {
		return Objects.requireNonNull(file.fileName(), "file name");
	}

	private static Entry entry(KernelFile file) {
		String fileName = fileName(file);
		int dot = fileName.lastIndexOf('.');
		String name = (dot >= 0) ? fileName.substring(0, dot) : fileName;
		CudaForm form;
		try {
			form = KernelSource.formOf(fileName);
		}
		catch (IllegalArgumentException ex) {
			throw new KernelDefinitionException(KernelDefinitionException.Kind.NOT_A_KERNEL_FILE, name, file.description(),
					String.valueOf(ex.getMessage()), null);
		}
		return new Entry(name, file, form);
	}

	/**
	 * A {@code .cu} with the prebuilt code beside it, when one of {@code a} and {@code b} is a
	 * {@code .cu} (possibly paired already) and the other prebuilt code in the same directory;
	 * otherwise {@code null}.
	 */
	private static @Nullable Entry pairWithPrebuilt(Entry a, Entry b) {
		Entry source = (a.form() == CudaForm.SOURCE) ? a : b;
		Entry prebuilt = (source == a) ? b : a;
		if (source.form() != CudaForm.SOURCE || prebuilt.form() == CudaForm.SOURCE || prebuilt.prebuilt() != null) {
			return null;
		}
		KernelFile sibling = sibling(source.file(), fileName(prebuilt.file()));
		if (sibling == null || !sibling.sameFile(prebuilt.file())) {
			return null;
		}
		if (source.prebuilt() != null
				&& PREBUILT_ORDER.indexOf(source.prebuiltForm()) <= PREBUILT_ORDER.indexOf(prebuilt.form())) {
			return source;
		}
		return new Entry(source.name(), source.file(), source.form(), prebuilt.file(), prebuilt.form());
	}

	private static @Nullable KernelFile sibling(KernelFile file, String fileName) {
		try {
			return file.sibling(fileName);
		}
		catch (IOException ex) {
			throw new UncheckedIOException("Cannot look for " + fileName + " beside " + file.description(), ex);
		}
	}

	private static byte[] read(KernelFile file, String what) {
		try {
			return file.read();
		}
		catch (IOException ex) {
			throw new UncheckedIOException("Cannot read " + what + file.description(), ex);
		}
	}

	// ---- pairing files with sources --------------------------------------------------------

	/** What the given sources are called where the kind alone would be unclear: "KernelSource bean". */
	private static String sourceWord(String kind) {
		return kind.equals(KERNEL_SOURCE) ? KERNEL_SOURCE : KERNEL_SOURCE + " " + kind;
	}

	private static KernelDefinition define(Entry entry, String kind, @Nullable String id, @Nullable KernelSource given) {
		KernelDefinition definition = defineWithoutPrebuilt(entry, kind, id, given);
		KernelFile prebuilt = entry.prebuilt();
		CudaForm prebuiltForm = entry.prebuiltForm();
		if (prebuilt == null || prebuiltForm == null) { // set together, by pairWithPrebuilt
			return definition;
		}
		byte[] image = read(prebuilt, "kernel file ");
		return new KernelDefinition(definition.source().prebuilt(prebuiltForm, image),
				definition.origin() + " with prebuilt " + fileName(prebuilt));
	}

	private static KernelDefinition defineWithoutPrebuilt(Entry entry, String kind, @Nullable String id,
			@Nullable KernelSource given) {
		KernelFile file = entry.file();
		KernelSource named;
		try {
			named = KernelSource.named(entry.name());
		}
		catch (IllegalArgumentException ex) {
			throw new KernelDefinitionException(KernelDefinitionException.Kind.INVALID_NAME, entry.name(),
					file.description(), "the file name is not a kernel name: " + ex.getMessage()
							+ "; name the file after its extern \"C\" entry point",
					KernelNames.identifierFor(entry.name()) + "." + extension(file), null);
		}
		byte[] code = read(file, "kernel file ");
		List<ParamType> sidecar = sidecarParams(entry);
		if (given != null) {
			String origin = file.description() + " with " + kind + " '" + id + "'";
			if (sidecar != null && !sidecar.equals(given.params())) {
				throw new KernelDefinitionException(KernelDefinitionException.Kind.PARAMS_CONTRADICT_SOURCE, entry.name(),
						origin, "its .params file declares " + sidecar + " but the " + kind + " declares " + given.params()
								+ "; remove the .params file or make them agree",
						null);
			}
			if (given.cudaForm() == null) {
				return new KernelDefinition(given.withCuda(entry.form(), code), origin);
			}
			if (given.cudaForm() == entry.form() && Arrays.equals(given.cudaCode(), code)) {
				return new KernelDefinition(given, origin);
			}
			throw new KernelDefinitionException(KernelDefinitionException.Kind.CUDA_CODE_CONTRADICTS_SOURCE, entry.name(),
					origin, "has CUDA code both in the " + kind + " and in the file, and they differ; leave the CUDA code "
							+ "out of the " + kind + " (it is taken from the file)",
					null);
		}
		List<ParamType> params = sidecar;
		String origin = file.description();
		if (params == null) {
			if (entry.form() != CudaForm.SOURCE) {
				throw new KernelDefinitionException(KernelDefinitionException.Kind.UNKNOWN_PARAMETER_TYPES, entry.name(),
						origin, "its parameter types are unknown: a " + entry.form().name().toLowerCase(Locale.ROOT)
								+ " file does not declare them; add a file '" + entry.name() + ".params' beside it (for "
								+ "example 'int, float, buffer, buffer') or a " + sourceWord(kind) + " named '"
								+ entry.name() + "' with .params(...)",
						null);
			}
			try {
				params = KernelSignatures.fromCudaSource(new String(code, StandardCharsets.UTF_8), entry.name());
			}
			catch (KernelSignatures.SignatureException ex) {
				List<String> defined = ex.definedFunctions();
				String suggestion = (defined.size() == 1) ? defined.get(0) + ".cu" : null;
				throw new KernelDefinitionException(ex.kind(), entry.name(), origin,
						"its parameter types cannot be read from the source: " + ex.getMessage(), suggestion, null);
			}
		}
		return new KernelDefinition(named.params(params.toArray(new ParamType[0])).withCuda(entry.form(), code), origin);
	}

	private static @Nullable List<ParamType> sidecarParams(Entry entry) {
		KernelFile params = sibling(entry.file(), entry.name() + ".params");
		if (params == null) {
			return null;
		}
		String content = new String(read(params, ""), StandardCharsets.UTF_8);
		try {
			return KernelSignatures.fromParamsFile(content);
		}
		catch (IllegalArgumentException ex) {
			throw new KernelDefinitionException(KernelDefinitionException.Kind.INVALID_PARAMS_FILE, entry.name(),
					params.description(), String.valueOf(ex.getMessage()), null);
		}
	}

	private static String extension(KernelFile file) {
		String fileName = fileName(file);
		return fileName.substring(fileName.lastIndexOf('.') + 1);
	}

	// ---- a location that does not exist ----------------------------------------------------

	/**
	 * A missing location's error: for a directory, the directories beside it that hold kernel
	 * files; for a kernel file, the kernel files beside it; the closest names first, and the one at
	 * most two edits away as what was likely meant.
	 */
	private static NoSuchFileException notFound(Path location) {
		List<Path> nearby = nearby(location);
		String missing = String.valueOf(location.toAbsolutePath().normalize().getFileName());
		String likelyMeant = (!nearby.isEmpty()
				&& Suggestions.isLikelyMeant(missing, nearby.get(0).getFileName().toString()))
						? nearby.get(0).toString() : null;
		StringBuilder reason = new StringBuilder("no such kernel directory or file");
		if (likelyMeant != null) {
			reason.append(" (did you mean ").append(likelyMeant).append("?)");
		}
		if (!nearby.isEmpty()) {
			reason.append("; kernel files are in ").append(nearby.stream().map(Path::toString).toList());
		}
		return new NoSuchFileException(location.toString(), null, reason.toString());
	}

	/** Beside {@code location}, as the caller wrote it: what holds kernel files, closest names first. */
	private static List<Path> nearby(Path location) {
		Path absolute = location.toAbsolutePath().normalize();
		Path parent = absolute.getParent();
		if (parent == null || parent.getParent() == null || !Files.isDirectory(parent)) {
			// No parent to look in below the root: walking a whole file system is too costly for a hint.
			return List.of();
		}
		String missing = absolute.getFileName().toString();
		boolean file = isKernelFile(missing);
		List<Path> candidates = new ArrayList<>();
		try (Stream<Path> siblings = Files.list(parent)) {
			for (Path sibling : siblings.toList()) {
				if (file ? Files.isRegularFile(sibling) && isKernelFile(sibling.getFileName().toString())
						: Files.isDirectory(sibling) && holdsKernelFiles(sibling)) {
					candidates.add(sibling);
				}
			}
		}
		catch (IOException | UncheckedIOException ex) {
			return List.of(); // only a hint
		}
		return Suggestions.closest(missing, candidates, (sibling) -> sibling.getFileName().toString(), NEARBY)
			.stream()
			.map((sibling) -> location.resolveSibling(sibling.getFileName()))
			.toList();
	}

	private static boolean holdsKernelFiles(Path directory) {
		try (Stream<Path> walk = Files.walk(directory, NEARBY_DEPTH)) {
			return walk.anyMatch((path) -> Files.isRegularFile(path) && isKernelFile(path.getFileName().toString()));
		}
		catch (IOException | UncheckedIOException ex) {
			return false;
		}
	}

	@Override
	public String toString() {
		return "KernelFiles" + this.entries.keySet();
	}

}
