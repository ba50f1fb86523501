package dev.gpucompute;

/** No kernel of that name is loaded in the context. */
public class KernelNotFoundException extends GpuException {

	private static final long serialVersionUID = 1L;

	public KernelNotFoundException(String name, java.util.Collection<String> known) {
		super("No kernel named '" + name + "' is loaded; known kernels: " + known);
	}

}
