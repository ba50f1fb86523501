package dev.gpucompute.internal.core;

import java.lang.ref.Cleaner;

import org.jspecify.annotations.Nullable;

/**
 * The safety net behind try-with-resources: a lease, event or buffer that becomes unreachable
 * without being closed is logged with the site that acquired it (when sites are being recorded)
 * and returned. Scoped use is the normal style; this only catches mistakes.
 */
public final class Leaks {

	public static final Cleaner CLEANER = Cleaner.create((runnable) -> {
		Thread thread = new Thread(runnable, "gpu-leak-cleaner");
		thread.setDaemon(true);
		return thread;
	});

	private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger("dev.gpucompute.leaks");

	private Leaks() {
	}

	/** Where something was acquired, captured only when leak detection is on (it costs a stack walk). */
	public static @Nullable Throwable site(boolean record, String what) {
		return record ? new Throwable(what + " acquired here") : null;
	}

	public static void report(String what, @Nullable Throwable site) {
		if (site != null) {
			LOG.warn("{} was never closed; it is released now. Acquired at:", what, site);
		}
		else {
			LOG.warn(what + " was never closed; it is released now. Set "
					+ "gpu.streams.leak-detection-threshold (GpuContextBuilder.leakDetectionThreshold) to see where "
					+ "it was acquired.");
		}
	}

}
