package dev.gpucompute;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import dev.gpucompute.internal.memory.CopyFaults;

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
	 * Makes step {@code step} ({@code PACK}, {@code COPY} or {@code UNPACK}, or {@code WATCH}: the
	 * registration of the completion of a copy of one chunk or less) of chunk {@code chunk} fail from
	 * now on.
	 * @return how many times it has failed so far (read it after the copy)
	 */
	public static AtomicInteger failAt(GpuContext context, String step, int chunk) {
		CopyFaults.Step target = CopyFaults.Step.valueOf(step);
		AtomicInteger failures = new AtomicInteger();
		ContextInternals.memory(context).injectFaults((at, index) -> {
			if (at == target && index == chunk) {
				failures.incrementAndGet();
				throw new GpuException(MESSAGE + ": " + step + " of chunk " + index);
			}
		});
		return failures;
	}

	/**
	 * Makes step {@code step} of chunk {@code chunk} wait, on the thread that reaches it, until
	 * {@code release} opens: {@code reached} opens when a copy gets there. For copies in progress
	 * while something else happens (a close); affects every copy of the context until {@link #clear}.
	 */
	public static void pauseAt(GpuContext context, String step, int chunk, CountDownLatch reached,
			CountDownLatch release) {
		CopyFaults.Step target = CopyFaults.Step.valueOf(step);
		ContextInternals.memory(context).injectFaults((at, index) -> {
			if (at == target && index == chunk) {
				reached.countDown();
				try {
					if (!release.await(30, TimeUnit.SECONDS)) {
						throw new GpuException(MESSAGE + ": the pause at " + step + " of chunk " + index + " was never released");
					}
				}
				catch (InterruptedException ex) {
					Thread.currentThread().interrupt();
					throw new GpuException(MESSAGE + ": interrupted in the pause at " + step, ex);
				}
			}
		});
	}

	public static void clear(GpuContext context) {
		ContextInternals.memory(context).injectFaults(null);
	}

}
