package dev.gpucompute.kernels;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Objects;

import org.jspecify.annotations.Nullable;

/** A {@link KernelFile} on a file system; two are the same file when their absolute, normal paths are equal. */
record PathKernelFile(Path path) implements KernelFile {

	PathKernelFile {
		Objects.requireNonNull(path, "path");
		if (path.getFileName() == null) {
			throw new IllegalArgumentException("Not a file: " + path);
		}
	}

	@Override
	public String fileName() {
		return this.path.getFileName().toString();
	}

	@Override
	public String description() {
		return this.path.toString();
	}

	@Override
	public byte[] read() throws IOException {
		return Files.readAllBytes(this.path);
	}

	@Override
	public @Nullable KernelFile sibling(String fileName) {
		Path sibling = this.path.resolveSibling(fileName);
		return Files.isRegularFile(sibling) ? new PathKernelFile(sibling) : null;
	}

	@Override
	public boolean sameFile(KernelFile other) {
		return other instanceof PathKernelFile file && absolute(this.path).equals(absolute(file.path));
	}

	private static Path absolute(Path path) {
		return path.toAbsolutePath().normalize();
	}

	@Override
	public String toString() {
		return this.path.toString();
	}

}
