package dev.gpucompute.test;

import java.time.Duration;
import java.util.List;
import java.util.Optional;

import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.platform.commons.support.AnnotationSupport;
import org.opentest4j.AssertionFailedError;

import dev.gpucompute.LeakTracker;

/**
 * The JUnit Jupiter extension behind {@link GpuLeakCheck}; register it with the annotation, or with
 * {@code @ExtendWith(GpuLeakCheckExtension.class)} (pending work then checked, with a grace of 1 s). Stateless: the tracker of
 * a test lives in that test's extension store.
 */
public class GpuLeakCheckExtension implements BeforeEachCallback, AfterEachCallback {

	private static final ExtensionContext.Namespace NAMESPACE = ExtensionContext.Namespace.create(GpuLeakCheckExtension.class);

	/** Packages of the runtime, whose frames are skipped to find the line that acquired a resource. */
	private static final List<String> RUNTIME_PACKAGES = List.of("dev.gpucompute", "dev.gpucompute.cpu",
			"dev.gpucompute.cuda", "dev.gpucompute.spi", "dev.gpucompute.autoconfigure.metrics");

	/** The runtime's implementation rooms ({@code dev.gpucompute.internal.*}). */
	private static final String INTERNAL_PACKAGES = "dev.gpucompute.internal.";

	@Override
	public void beforeEach(ExtensionContext context) {
		context.getStore(NAMESPACE).put(LeakTracker.class, LeakTracker.start());
	}

	@Override
	public void afterEach(ExtensionContext context) {
		LeakTracker tracker = context.getStore(NAMESPACE).remove(LeakTracker.class, LeakTracker.class);
		if (tracker == null) {
			return;
		}
		try {
			List<LeakTracker.OpenResource> open = tracker.openResources();
			GpuLeakCheck settings = settings(context);
			List<String> pending = (settings == null || settings.pendingWork())
					? tracker.pendingWork(Duration.ofMillis((settings != null) ? settings.pendingWorkGraceMillis() : 1000))
					: List.of();
			if (!open.isEmpty() || !pending.isEmpty()) {
				throw failure(open, pending);
			}
		}
		finally {
			tracker.close();
		}
	}

	/** The nearest {@link GpuLeakCheck}: the method's, else its class's or an enclosing class's; {@code null} for none. */
	private static @Nullable GpuLeakCheck settings(ExtensionContext context) {
		Optional<GpuLeakCheck> settings = AnnotationSupport.findAnnotation(context.getTestMethod(), GpuLeakCheck.class);
		Optional<ExtensionContext> current = Optional.of(context);
		while (settings.isEmpty() && current.isPresent()) {
			settings = AnnotationSupport.findAnnotation(current.get().getTestClass(), GpuLeakCheck.class);
			current = current.get().getParent();
		}
		return settings.orElse(null);
	}

	private static AssertionFailedError failure(List<LeakTracker.OpenResource> open, List<String> pending) {
		StringBuilder message = new StringBuilder("GPU leak check: the test left");
		if (!open.isEmpty()) {
			message.append(' ').append(open.size()).append((open.size() == 1) ? " resource" : " resources").append(" open");
		}
		if (!pending.isEmpty()) {
			message.append(open.isEmpty() ? " " : " and ").append("work in flight");
		}
		message.append(':');
		for (LeakTracker.OpenResource resource : open) {
			message.append("\n  - ").append(resource).append(", at ").append(site(resource.acquiredAt()));
		}
		for (String work : pending) {
			message.append("\n  - work in flight on ").append(work);
		}
		message.append("\nClose leases, buffers and events (try-with-resources), and wait for the work a test starts "
				+ "(synchronize(), or join its futures).");
		AssertionFailedError error = new AssertionFailedError(message.toString());
		for (LeakTracker.OpenResource resource : open) {
			error.addSuppressed(resource.acquiredAt());
		}
		return error;
	}

	/** The first frame of the acquisition stack outside the runtime: the line that acquired it. */
	static String site(Throwable acquiredAt) {
		StackTraceElement[] frames = acquiredAt.getStackTrace();
		for (StackTraceElement frame : frames) {
			String className = frame.getClassName();
			int dot = className.lastIndexOf('.');
			String packageName = (dot < 0) ? "" : className.substring(0, dot);
			if (!RUNTIME_PACKAGES.contains(packageName) && !packageName.startsWith(INTERNAL_PACKAGES)
					&& !className.startsWith("java.") && !className.startsWith("jdk.")) {
				return frame.toString();
			}
		}
		return (frames.length > 0) ? frames[0].toString() : "an unknown site";
	}

}
