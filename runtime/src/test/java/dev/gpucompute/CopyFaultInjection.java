package dev.gpucompute;

import java.util.concurrent.atomic.AtomicInteger;

/**
 * Lets tests outside this package make one step of a copy fail, as a refused driver call or a
 * failed allocation would: the step's {@code before} hook throws a {@link GpuException} whose
 * message starts with {@link #MESSAGE}. Affects every copy of the context until {@link #clear}.
 */
public final class CopyFaultInjection {

	/** The start of the injected failure's message. */
	public static final String MESSAGE = "injected copy failure";

	private CopyFaultInjection() {
	}

	/**
	 * Makes step {@code step} ({@code PACK}, {@code COPY} or {@code UNPACK}) of chunk {@code chunk}
	 * fail from now on.
	 * @return how many times it has failed so far (read it after the copy)
	 */
	public static AtomicInteger failAt(GpuContext context, String step, int chunk) {
		CopyPipeline.Faults.Step target = CopyPipeline.Faults.Step.valueOf(step);
		AtomicInteger failures = new AtomicInteger();
		context.copies().injectFaults((at, index) -> {
			if (at == target && index == chunk) {
				failures.incrementAndGet();
				throw new GpuException(MESSAGE + ": " + step + " of chunk " + index);
			}
		});
		return failures;
	}

	public static void clear(GpuContext context) {
		context.copies().injectFaults(null);
	}

}
