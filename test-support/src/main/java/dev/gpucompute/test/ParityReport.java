package dev.gpucompute.test;

import java.util.List;

import dev.gpucompute.ElementType;
import org.jspecify.annotations.Nullable;

/**
 * What a {@link KernelParity} check found: per compared buffer, how many elements disagree beyond the
 * tolerance and the largest differences seen.
 *
 * @param kernel the kernel's name
 * @param first the first side (e.g. "CUDA device 0")
 * @param second the second side (e.g. "CPU device 0")
 * @param tolerance the tolerance the elements were compared with
 * @param buffers one comparison per compared buffer argument
 */
public record ParityReport(String kernel, String first, String second, Tolerance tolerance, List<Comparison> buffers) {

	/** Whether every compared element agreed within the tolerance. */
	public boolean agrees() {
		return this.buffers.stream().allMatch((buffer) -> buffer.mismatches() == 0);
	}

	@Override
	public String toString() {
		StringBuilder text = new StringBuilder("Kernel '" + this.kernel + "', " + this.first + " vs " + this.second
				+ ", tolerance " + this.tolerance + ":");
		for (Comparison buffer : this.buffers) {
			text.append("\n  ").append(buffer);
		}
		return text.toString();
	}

	/**
	 * One compared buffer.
	 *
	 * @param argument the buffer's argument index
	 * @param type its element type
	 * @param count its elements
	 * @param mismatches elements that disagree beyond the tolerance
	 * @param firstMismatch the index of the first of them, or -1
	 * @param firstValues the first side's and the second side's value there, in words, or {@code null}
	 * @param maxUlps the largest distance in ulps between two non-NaN floating-point elements (0 for integers)
	 * @param maxAbsoluteDifference the largest absolute difference between two elements (NaN against a
	 * number counts as infinite)
	 */
	public record Comparison(int argument, ElementType type, int count, int mismatches, int firstMismatch,
			@Nullable String firstValues, long maxUlps, double maxAbsoluteDifference) {

		@Override
		public String toString() {
			String head = "argument " + this.argument + " (" + this.type + "[" + this.count + "]): ";
			if (this.mismatches == 0) {
				return head + "all agree (largest difference " + this.maxUlps + " ulps, " + this.maxAbsoluteDifference
						+ " absolute)";
			}
			return head + this.mismatches + " of " + this.count + " disagree, the first at index " + this.firstMismatch
					+ " (" + this.firstValues + "); largest difference " + this.maxUlps + " ulps, "
					+ this.maxAbsoluteDifference + " absolute";
		}

	}

}
