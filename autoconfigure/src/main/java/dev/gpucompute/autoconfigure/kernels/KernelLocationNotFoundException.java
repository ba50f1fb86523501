package dev.gpucompute.autoconfigure.kernels;

import java.util.List;

import dev.gpucompute.GpuException;
import dev.gpucompute.autoconfigure.kernels.GpuKernels.KernelLocation;
import org.jspecify.annotations.Nullable;

/**
 * A location in {@code gpu.kernels.locations} that the application configured does not exist (a
 * misspelled directory, a file that is not there, a pattern that matches nothing). Fails start-up,
 * so that a typo is found before the first request needs a kernel.
 */
public class KernelLocationNotFoundException extends GpuException {

	private static final long serialVersionUID = 1L;

	private final transient KernelLocation location;

	private final List<String> kernelDirectories;

	private final @Nullable String likelyMeant;

	/**
	 * @param location the location that does not exist, with where it was configured
	 * @param kernelDirectories locations near it that do hold kernel files, closest names first
	 * (may be empty)
	 * @param likelyMeant the one of them that the location looks like a misspelling of, or
	 * {@code null}
	 */
	public KernelLocationNotFoundException(KernelLocation location, List<String> kernelDirectories,
			@Nullable String likelyMeant) {
		super("gpu.kernels.locations entry " + location + " does not exist"
				+ ((likelyMeant != null) ? " (did you mean '" + likelyMeant + "'?)" : ""));
		this.location = location;
		this.kernelDirectories = List.copyOf(kernelDirectories);
		this.likelyMeant = likelyMeant;
	}

	/** The location that does not exist, with where it was configured. */
	public KernelLocation location() {
		return this.location;
	}

	/** Locations near the missing one that hold kernel files, closest names first, at most five. */
	public List<String> kernelDirectories() {
		return this.kernelDirectories;
	}

	/** The nearby location this one looks like a misspelling of, or {@code null}. */
	public @Nullable String likelyMeant() {
		return this.likelyMeant;
	}

}
