package dev.gpucompute;

/**
 * Three-dimensional extent of a grid (in blocks) or a block (in threads). Every component must be
 * at least 1.
 */
public record Dim3(int x, int y, int z) {

	public Dim3 {
		if (x < 1 || y < 1 || z < 1) {
			throw new InvalidLaunchConfigException("Dimensions must be at least 1 in every axis, got " + x + "x" + y + "x" + z);
		}
	}

	public static Dim3 of(int x) {
		return new Dim3(x, 1, 1);
	}

	public static Dim3 of(int x, int y) {
		return new Dim3(x, y, 1);
	}

	public static Dim3 of(int x, int y, int z) {
		return new Dim3(x, y, z);
	}

	/** The product of the three components. */
	public long volume() {
		return (long) this.x * this.y * this.z;
	}

	@Override
	public String toString() {
		return this.x + "x" + this.y + "x" + this.z;
	}

}
