package dev.gpucompute.internal.memory;

/**
 * Called before each step of each copy of a context: before a chunk is packed, copied and unpacked,
 * and before a copy of one chunk or less registers its completion ({@link Step#WATCH}). Given to the
 * memory room when it is built and fixed for its life; a context opens with {@link #NONE}, whose call
 * the JIT removes. Throwing from it makes that step fail, as a refused driver call or a failed
 * allocation would, and blocking in it holds the copy there: how tests drive a copy into each of its
 * failure paths.
 */
@FunctionalInterface
public interface CopyFaults {

	/** Nothing before any step. */
	CopyFaults NONE = (step, chunk) -> {
	};

	/** A step of a copy. */
	enum Step {

		PACK, COPY, UNPACK, WATCH

	}

	/** Called on the thread about to take {@code step} of chunk {@code chunk} (0 for a copy in one step). */
	void before(Step step, int chunk);

}
