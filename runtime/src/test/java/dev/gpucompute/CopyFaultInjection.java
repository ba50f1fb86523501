package dev.gpucompute;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import dev.gpucompute.internal.context.ContextAssembly;
import dev.gpucompute.internal.memory.CopyFaults;

/**
 * Makes one step of a context's copies fail, as a refused driver call or a failed allocation would,
 * or wait: a {@link CopyFaults} the context is opened with ({@link #open}), armed and disarmed by the
 * test. A failure is a {@link GpuException} whose message starts with {@link #MESSAGE}. Affects every
 * copy of the context until {@link #clear}.
 */
public final class CopyFaultInjection implements CopyFaults {

	/** The start of the injected failure's message. */
	public static final String MESSAGE = "injected copy failure";

	private volatile CopyFaults armed = CopyFaults.NONE;

	/** Opens a context of {@code builder}'s settings (on device 0) whose copies go through this. */
	public GpuContext open(GpuContextBuilder builder) {
		return ContextAssembly.open(builder.settings(), 0, new ContextAssembly.Options(null, -1, this));
	}

	@Override
	public void before(Step step, int chunk) {
		this.armed.before(step, chunk);
	}

	/**
	 * Makes step {@code step} ({@code PACK}, {@code COPY} or {@code UNPACK}, or {@code WATCH}: the
	 * registration of the completion of a copy of one chunk or less) of chunk {@code chunk} fail from
	 * now on.
	 * @return how many times it has failed so far (read it after the copy)
	 */
	public AtomicInteger failAt(String step, int chunk) {
		Step target = Step.valueOf(step);
		AtomicInteger failures = new AtomicInteger();
		this.armed = (at, index) -> {
			if (at == target && index == chunk) {
				failures.incrementAndGet();
				throw new GpuException(MESSAGE + ": " + step + " of chunk " + index);
			}
		};
		return failures;
	}

	/**
	 * Makes step {@code step} of chunk {@code chunk} wait, on the thread that reaches it, until
	 * {@code release} opens: {@code reached} opens when a copy gets there. For copies in progress
	 * while something else happens (a close).
	 */
	public void pauseAt(String step, int chunk, CountDownLatch reached, CountDownLatch release) {
		Step target = Step.valueOf(step);
		this.armed = (at, index) -> {
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
		};
	}

	/** Makes every step of every copy of a context run from now on as written, as {@code faults} says. */
	public void arm(CopyFaults faults) {
		this.armed = faults;
	}

	/** Lets every step of every copy run again. */
	public void clear() {
		this.armed = CopyFaults.NONE;
	}

}
