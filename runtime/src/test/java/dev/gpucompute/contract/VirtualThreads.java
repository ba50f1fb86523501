package dev.gpucompute.contract;

import java.lang.reflect.Method;

import org.junit.jupiter.api.Assumptions;

/**
 * Virtual threads for the tests of a library compiled for Java 17: started through reflection where
 * the JVM has them (Java 21+); before that, the calling test is aborted with the reason.
 */
public final class VirtualThreads {

	private VirtualThreads() {
	}

	/** Aborts the calling test when this JVM has no virtual threads (before Java 21). */
	public static void assumeAvailable() {
		starter();
	}

	/** Starts {@code body} on a new virtual thread; aborts the calling test before Java 21. */
	public static Thread start(Runnable body) {
		try {
			return (Thread) starter().invoke(null, body);
		}
		catch (ReflectiveOperationException ex) {
			throw new IllegalStateException("Thread.startVirtualThread failed", ex);
		}
	}

	private static Method starter() {
		try {
			return Thread.class.getMethod("startVirtualThread", Runnable.class);
		}
		catch (NoSuchMethodException ex) {
			Assumptions.abort("no virtual threads before Java 21 (this JVM: Java " + Runtime.version().feature() + ")");
			throw new AssertionError("unreachable: abort throws");
		}
	}

}
