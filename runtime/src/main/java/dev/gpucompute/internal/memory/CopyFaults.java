package dev.gpucompute.internal.memory;

/**
 * A test seam: called before each chunk is packed, copied and unpacked, and before a copy of one
 * chunk or less registers its completion (WATCH); throwing simulates that step failing.
 */
@FunctionalInterface
public interface CopyFaults {

	enum Step {

		PACK, COPY, UNPACK, WATCH

	}

	void before(Step step, int chunk);

}
