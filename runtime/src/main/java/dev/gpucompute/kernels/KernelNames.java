package dev.gpucompute.kernels;

/**
 * Kernel names: a kernel file's name is its {@code extern "C"} entry point, so it must be a C
 * identifier.
 */
final class KernelNames {

	private KernelNames() {
	}

	/**
	 * A C identifier close to {@code name}, for a file whose name is not one: runs of characters
	 * other than letters, digits and underscores become one underscore ({@code my-kernel} becomes
	 * {@code my_kernel}), and a name that would start with a digit gets a {@code kernel_} prefix.
	 */
	static String identifierFor(String name) {
		String identifier = name.replaceAll("[^A-Za-z0-9_]+", "_").replaceAll("^_+|_+$", "");
		if (identifier.isEmpty()) {
			return "kernel";
		}
		return Character.isDigit(identifier.charAt(0)) ? "kernel_" + identifier : identifier;
	}

}
