package dev.gpucompute;

/**
 * Three-dimensional extent of a grid (in blocks) or a block (in threads). No component may be
 * negative. A block needs at least 1 thread in every axis ({@link LaunchConfig} checks it); a grid
 * with 0 blocks in some axis is an empty launch, which does nothing (see {@link LaunchConfig#isEmpty()}).
 */
public record Dim3(int x, int y, int z) {

	public Dim3 {
		if (x < 0 || y < 0 || z < 0) {
			throw new InvalidLaunchConfigException("Dimensions must not be negative in any axis, got " + x + "x" + y + "x" + z);
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

	/** The product of the three components; 0 when any of them is. */
	public long volume() {
		return (long) this.x * this.y * this.z;
	}

	@Override
	public String toString() {
		return this.x + "x" + this.y + "x" + this.z;
	}

}
