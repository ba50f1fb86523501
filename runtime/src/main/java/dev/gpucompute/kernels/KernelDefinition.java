package dev.gpucompute.kernels;

import java.util.Objects;

import dev.gpucompute.KernelSource;

/**
 * One kernel as {@link KernelFiles#define} defines it: the source to load, and where it came from.
 *
 * @param source the kernel, ready for {@code GpuLauncher.load} or the context builder's {@code kernels(...)}
 * @param origin where it came from, for messages: a file's description ({@code gpu/kernels/saxpy.cu}),
 * a given source's ({@code bean 'saxpyKernel'}), or both ({@code ... with bean 'saxpyKernel'}),
 * with {@code with prebuilt saxpy.fatbin} when code compiled ahead of time was found beside it
 */
public record KernelDefinition(KernelSource source, String origin) {

	public KernelDefinition {
		Objects.requireNonNull(source, "source");
		Objects.requireNonNull(origin, "origin");
	}

	/** The kernel's name. */
	public String name() {
		return this.source.name();
	}

}
