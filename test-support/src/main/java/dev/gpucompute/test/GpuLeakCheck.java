package dev.gpucompute.test;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Inherited;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.parallel.ResourceLock;

/**
 * Fails a test that leaves a GPU stream lease, device buffer or event open, or work in flight, when it
 * ends, naming what was left and the line that acquired it. With and without Spring:
 *
 * <pre>{@code
 * @GpuLeakCheck
 * class PricingTests { ... }               // plain JUnit: contexts the test opens itself
 *
 * @SpringBootTest
 * @GpuCpuBackend
 * @GpuLeakCheck
 * class PricingControllerTests { ... }     // the application's GpuContext beans
 * }</pre>
 *
 * <p>What counts, per test method (from before its {@code @BeforeEach} methods to after its
 * {@code @AfterEach} methods), on every {@code GpuContext} of the JVM:
 * <ul>
 * <li>a lease, buffer or event acquired during the test and not closed by its end, on a context that is
 * still open, or that was still open when the test closed its context (the context released it, not
 * its holder). What was acquired before the test, such as an application's long-lived buffers, is not
 * counted;
 * <li>with {@link #pendingWork()} (the default), work still in flight on an open context when the test
 * ends and {@link #pendingWorkGraceMillis()} (1 s) later: a pooled stream not idle, the test thread's
 * default stream not idle, or a future of a copy or {@code completion()} not complete. It catches work
 * nobody waited for that runs past the grace, not work that happened to finish within it.
 * </ul>
 * The failure lists each resource with the first line outside the runtime that acquired it, and carries
 * the full acquisition stacks as suppressed exceptions. Built on {@code dev.gpucompute.LeakTracker},
 * which records acquisition sites while a test runs (a stack walk per acquisition).
 *
 * <p>Leak-checked tests hold a shared {@link ResourceLock}, so under JUnit's parallel execution they
 * do not run at the same time as each other; a test without the check that uses a context at the same
 * time can still show up in a checked test's report.
 */
@Target({ ElementType.TYPE, ElementType.METHOD })
@Retention(RetentionPolicy.RUNTIME)
@Documented
@Inherited
@ExtendWith(GpuLeakCheckExtension.class)
@ResourceLock(GpuLeakCheck.RESOURCE)
public @interface GpuLeakCheck {

	/** The {@link ResourceLock} that leak-checked tests hold. */
	String RESOURCE = "dev.gpucompute.test.GpuLeakCheck";

	/** Whether work still in flight when the test ends (after {@link #pendingWorkGraceMillis()}) fails it too. */
	boolean pendingWork() default true;

	/**
	 * How long work in flight at the end of the test may take to finish before it counts (a closed
	 * buffer's free is enqueued on its stream, so correct code leaves a stream busy for a moment).
	 */
	long pendingWorkGraceMillis() default 1000;

}
