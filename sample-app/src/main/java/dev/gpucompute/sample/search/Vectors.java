package dev.gpucompute.sample.search;

/**
 * Checks and prepares incoming vectors. Every check runs before any device resource is touched.
 */
public final class Vectors {

	/**
	 * Largest Euclidean norm a vector may have. Keeps every dot product, and every partial sum the
	 * kernels form on the way, far from float overflow (|q·v| <= |q||v| <= 1e36 < 3.4e38), so a score
	 * is never infinite or NaN and the ranking stays well defined.
	 */
	public static final double MAX_NORM = 1e18;

	private Vectors() {
	}

	/**
	 * Flattens rows into one row-major array, checking each row's length.
	 * @param field the JSON field, for messages ({@code vectors})
	 * @throws ServiceProblem (400) for a missing row or one of the wrong dimension
	 */
	public static float[] flatten(String collection, String field, float[][] rows, int dimension) {
		if (rows == null) {
			throw ServiceProblem.invalid(field, field + " is required");
		}
		float[] flat = new float[Math.multiplyExact(rows.length, dimension)];
		for (int r = 0; r < rows.length; r++) {
			float[] row = rows[r];
			if (row == null) {
				throw ServiceProblem.invalid(field + "[" + r + "]", field + "[" + r + "] is null");
			}
			if (row.length != dimension) {
				throw ServiceProblem.wrongDimension(collection, field + "[" + r + "]", dimension, row.length);
			}
			System.arraycopy(row, 0, flat, r * dimension, dimension);
		}
		return flat;
	}

	/**
	 * Checks that every value is finite and every row's norm is usable for the metric.
	 * @throws ServiceProblem (400) naming the first offending value or row
	 */
	public static void check(String field, float[] flat, int dimension, Metric metric) {
		int rows = flat.length / dimension;
		for (int r = 0; r < rows; r++) {
			double squares = 0;
			int base = r * dimension;
			for (int j = 0; j < dimension; j++) {
				float value = flat[base + j];
				if (!Float.isFinite(value)) {
					throw ServiceProblem.nonFinite(field + "[" + r + "][" + j + "]", value);
				}
				squares += (double) value * value;
			}
			double norm = Math.sqrt(squares);
			if (norm > MAX_NORM) {
				throw ServiceProblem.invalid(field + "[" + r + "]", field + "[" + r + "] has norm " + norm
						+ ", above the supported maximum of " + MAX_NORM + " (its scores could overflow float32)");
			}
			if (metric == Metric.COSINE && norm == 0) {
				throw ServiceProblem.invalid(field + "[" + r + "]",
						field + "[" + r + "] is the zero vector, which has no cosine similarity with anything");
			}
		}
	}

	/** Scales each row to unit length in place (rows checked by {@link #check} first). */
	public static void normalize(float[] flat, int dimension) {
		int rows = flat.length / dimension;
		for (int r = 0; r < rows; r++) {
			int base = r * dimension;
			double squares = 0;
			for (int j = 0; j < dimension; j++) {
				squares += (double) flat[base + j] * flat[base + j];
			}
			// One division per row, not per value: the ingest path normalises millions of values.
			double inverse = 1.0 / Math.sqrt(squares);
			for (int j = 0; j < dimension; j++) {
				flat[base + j] = (float) (flat[base + j] * inverse);
			}
		}
	}

}
