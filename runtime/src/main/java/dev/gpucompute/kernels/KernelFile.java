package dev.gpucompute.kernels;

import java.io.IOException;
import java.nio.file.Path;

import org.jspecify.annotations.Nullable;

/**
 * One file that may hold a kernel, as {@link KernelFiles} reads it: its name, its bytes, and the
 * files beside it (a kernel's {@code .params} file, the prebuilt code beside a {@code .cu}). A
 * directory on disk gives them with {@link #of(Path)} (or {@link KernelFiles#scan}); other places
 * implement this interface: the Spring starter answers it from Spring {@code Resource}s, so that
 * {@code classpath:} locations inside jars work too.
 *
 * <p>Implementations should be immutable and may be called from any thread; {@link KernelFiles}
 * reads each file once, when it {@link KernelFiles#define defines} the kernels.
 */
public interface KernelFile {

	/**
	 * The file's name with its extension ({@code saxpy.cu}): the extension says the form of the
	 * code, the rest is the kernel's name.
	 */
	String fileName();

	/**
	 * Where the file is, for messages: a path, a URL, a Spring resource's description. Names the
	 * kernel's origin in {@link KernelDefinition#origin()} and in every error about it.
	 */
	String description();

	/**
	 * The file's content.
	 * @throws IOException when it cannot be read
	 */
	byte[] read() throws IOException;

	/**
	 * The file named {@code fileName} in the same directory as this one, or {@code null} when there
	 * is none (or this place cannot tell).
	 * @throws IOException when looking for it fails
	 */
	@Nullable KernelFile sibling(String fileName) throws IOException;

	/**
	 * Whether {@code other} is this same file, found twice (by two locations or patterns that
	 * overlap): then it counts once. The default compares with {@code equals}.
	 */
	default boolean sameFile(KernelFile other) {
		return equals(other);
	}

	/** The file at {@code path} on a file system (which need not exist yet: reading it then fails). */
	static KernelFile of(Path path) {
		return new PathKernelFile(path);
	}

}
