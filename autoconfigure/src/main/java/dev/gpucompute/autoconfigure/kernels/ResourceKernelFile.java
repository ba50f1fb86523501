package dev.gpucompute.autoconfigure.kernels;

import java.io.IOException;
import java.io.InputStream;
import java.util.Objects;

import org.jspecify.annotations.Nullable;
import org.springframework.core.io.Resource;

import dev.gpucompute.kernels.KernelFile;

/**
 * A kernel file as a Spring {@link Resource}: a file, or an entry of a jar found through
 * {@code classpath:}. Two are the same file when their URIs are equal.
 */
record ResourceKernelFile(Resource resource) implements KernelFile {

	ResourceKernelFile {
		Objects.requireNonNull(resource, "resource");
	}

	@Override
	public String fileName() {
		return Objects.requireNonNull(this.resource.getFilename(), "file name");
	}

	@Override
	public String description() {
		return this.resource.getDescription();
	}

	@Override
	public byte[] read() throws IOException {
		try (InputStream in = this.resource.getInputStream()) {
			return in.readAllBytes();
		}
	}

	@Override
	public @Nullable KernelFile sibling(String fileName) {
		Resource sibling;
		try {
			sibling = this.resource.createRelative(fileName);
		}
		catch (IOException | RuntimeException ex) {
			return null; // a resource that has no directory to look in
		}
		return sibling.exists() ? new ResourceKernelFile(sibling) : null;
	}

	@Override
	public boolean sameFile(KernelFile other) {
		if (!(other instanceof ResourceKernelFile file)) {
			return false;
		}
		try {
			return this.resource.getURI().equals(file.resource.getURI());
		}
		catch (IOException ex) {
			return false;
		}
	}

}
