package dev.gpucompute.spi;

import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;

import org.jspecify.annotations.Nullable;

/**
 * Host threads as the runtime names them in messages, stream names and reports, and whether one is
 * virtual. A virtual thread has an empty name unless its creator gave it one (a Spring request
 * thread has none), so a message built from the name alone named nothing ("thread ''"); such a thread
 * is named by its id and kind instead. Stateless and thread-safe; works on Java 17, where no thread is
 * virtual.
 */
public final class HostThreads {

	/** {@code Thread.isVirtual()} (Java 21+), looked up reflectively: the runtime is compiled for Java 17. */
	private static final @Nullable MethodHandle IS_VIRTUAL = isVirtualHandle();

	private HostThreads() {
	}

	/**
	 * A name for {@code thread}: its own when it has one, else one made of its id and kind,
	 * {@code virtual thread #42} or {@code thread #42}. For reports that hold a thread's name
	 * ({@code StreamPool.LeaseInfo.thread()}) and for stream names.
	 */
	public static String name(Thread thread) {
		String name = thread.getName();
		if (!name.isEmpty()) {
			return name;
		}
		return (isVirtual(thread) ? "virtual thread #" : "thread #") + id(thread);
	}

	/**
	 * {@code thread} as a message names it: {@code thread 'http-nio-8080-exec-1'} when it has a name,
	 * else {@code virtual thread #42} (or {@code thread #42}), as {@link #name} makes it.
	 */
	public static String describe(Thread thread) {
		String name = thread.getName();
		return name.isEmpty() ? name(thread) : "thread '" + name + "'";
	}

	/** Whether {@code thread} is a virtual thread; always {@code false} before Java 21. */
	public static boolean isVirtual(Thread thread) {
		if (IS_VIRTUAL == null) {
			return false;
		}
		try {
			return (boolean) IS_VIRTUAL.invokeExact(thread);
		}
		catch (Throwable ex) {
			return false;
		}
	}

	@SuppressWarnings("deprecation") // Thread.threadId() is Java 19+; getId() answers the same
	private static long id(Thread thread) {
		return thread.getId();
	}

	private static @Nullable MethodHandle isVirtualHandle() {
		try {
			return MethodHandles.publicLookup().findVirtual(Thread.class, "isVirtual", MethodType.methodType(boolean.class));
		}
		catch (ReflectiveOperationException | RuntimeException ex) {
			return null; // Java 17..20: no virtual threads
		}
	}

}
