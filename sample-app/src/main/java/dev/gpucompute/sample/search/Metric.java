package dev.gpucompute.sample.search;

import java.util.Locale;

/** How a collection scores a query against its vectors. */
public enum Metric {

	/**
	 * Cosine similarity. Vectors are normalised to unit length when stored and queries when
	 * searched, so the kernels compute a plain dot product. Zero vectors are refused.
	 */
	COSINE,

	/** The raw dot product (inner product), for embeddings meant to be compared unnormalised. */
	DOT;

	/** The name used in JSON and files: {@code cosine} or {@code dot}. */
	public String jsonName() {
		return name().toLowerCase(Locale.ROOT);
	}

	/**
	 * The metric for a JSON name.
	 * @throws ServiceProblem (400) for anything but {@code cosine} or {@code dot}
	 */
	public static Metric fromJson(String name) {
		if (name != null) {
			for (Metric metric : values()) {
				if (metric.jsonName().equals(name.toLowerCase(Locale.ROOT))) {
					return metric;
				}
			}
		}
		throw ServiceProblem.invalid("metric", "metric must be 'cosine' or 'dot', got " + ((name != null) ? "'" + name + "'" : "none"));
	}

}
