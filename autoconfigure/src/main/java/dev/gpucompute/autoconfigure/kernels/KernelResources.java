package dev.gpucompute.autoconfigure.kernels;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;

import org.jspecify.annotations.Nullable;
import org.springframework.core.io.Resource;
import org.springframework.core.io.support.ResourcePatternResolver;

import dev.gpucompute.autoconfigure.kernels.GpuKernels.KernelLocation;
import dev.gpucompute.kernels.KernelFile;
import dev.gpucompute.kernels.KernelFiles;
import dev.gpucompute.spi.Suggestions;

/**
 * The Spring half of the kernel files: resolves {@code gpu.kernels.locations} (directories, single
 * files and Ant patterns, {@code classpath:} searched in every class-path root, any other Spring
 * resource prefix) into {@link KernelFile}s for the runtime's {@link KernelFiles}, which knows the
 * convention. A configured location that does not exist fails with
 * {@link KernelLocationNotFoundException}, naming the directories near it that do hold kernel files.
 */
final class KernelResources {

	private static final Log logger = LogFactory.getLog(GpuKernels.class);

	/** How many nearby directories a missing location's report lists. */
	private static final int NEARBY = 5;

	private KernelResources() {
	}

	/**
	 * The files found under {@code locations}, in their order: every readable file a location matches
	 * (kernel files, and whatever else a pattern matches, for {@link KernelFiles#of} to refuse), without
	 * {@code .params} files, which {@link KernelFiles} reads beside their kernel files.
	 * @throws KernelLocationNotFoundException when a configured location does not exist
	 */
	static List<KernelFile> find(List<KernelLocation> locations, ResourcePatternResolver resolver) {
		List<KernelFile> files = new ArrayList<>();
		for (KernelLocation location : locations) {
			int found = 0;
			for (String pattern : patterns(location.location())) {
				for (Resource resource : resources(resolver, pattern)) {
					String fileName = resource.getFilename();
					if (!resource.isReadable() || fileName == null || KernelFiles.isParamsFile(fileName)) {
						continue;
					}
					found++;
					files.add(new ResourceKernelFile(resource));
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
		for (String ext : KernelFiles.EXTENSIONS) {
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
		return Suggestions.closest(missing, directories, (directory) -> firstSegment(directory, prefix + parent),
				NEARBY);
	}

	/**
	 * The one nearby directory that looks like what a misspelled location meant: a sibling whose
	 * name is at most two edits away, or {@code null}.
	 */
	static @Nullable String likelyMeant(String location, List<String> nearby) {
		if (nearby.isEmpty()) {
			return null;
		}
		String trimmed = location.strip().endsWith("/") ? location.strip().substring(0, location.strip().length() - 1)
				: location.strip();
		int slash = trimmed.lastIndexOf('/');
		String parent = trimmed.substring(0, slash + 1);
		String missing = trimmed.substring(slash + 1);
		String first = nearby.get(0);
		return (first.startsWith(parent) && Suggestions.isLikelyMeant(missing, firstSegment(first, parent))) ? first
				: null;
	}

	private static String firstSegment(String directory, String parent) {
		String rest = directory.startsWith(parent) ? directory.substring(parent.length()) : directory;
		int slash = rest.indexOf('/');
		return (slash >= 0) ? rest.substring(0, slash) : rest;
	}

	private static @Nullable String url(Resource resource) {
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
		return KernelFiles.EXTENSIONS.stream().map((ext) -> directory + "**/*." + ext).toList();
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
	private static @Nullable String directory(String location) {
		String base = searchBase(location);
		String path = base.substring(base.indexOf(':') + 1);
		String lower = path.toLowerCase(Locale.ROOT);
		if (path.contains("*") || path.contains("?") || KernelFiles.isKernelFile(lower)) {
			return null;
		}
		return base.endsWith("/") ? base : base + "/";
	}

}
