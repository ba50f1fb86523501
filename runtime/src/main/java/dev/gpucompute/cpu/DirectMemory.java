package dev.gpucompute.cpu;

import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.concurrent.atomic.AtomicLong;

import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import dev.gpucompute.GpuOutOfMemoryException;

/**
 * The CPU backend's "device memory": off-heap buffers, allocated and freed deterministically.
 *
 * <p>Where JNA is on the class path (the starter brings it), memory comes from the C library's
 * {@code calloc} and goes back with {@code free}: it is zeroed like a direct buffer, but it is not
 * counted against {@code -XX:MaxDirectMemorySize} (whose default is the maximum heap), so a service
 * with a small heap can still hold large collections, as a GPU holds them outside the heap; and
 * large blocks come from fresh pages ({@code mmap} on Linux), which become resident only as they
 * are written and go back to the system when freed. Without JNA, or where its native part cannot load, {@code ByteBuffer.allocateDirect}
 * serves, freed through the JDK's cleaner (otherwise direct memory returns only when the garbage
 * collector finds the buffer unreachable, which would make "memory back to its start" untestable).
 * The choice is made once per JVM and logged at DEBUG.
 */
final class DirectMemory {

	private static final Logger log = LoggerFactory.getLogger(DirectMemory.class);

	private static final @Nullable Object UNSAFE;

	private static final @Nullable Method INVOKE_CLEANER;

	/** The C allocator, or {@code null} where only direct buffers are available. */
	private static final @Nullable NativeAllocator NATIVE;

	/** Bytes held by buffers this class allocated and has not freed, over all CPU contexts. */
	private static final AtomicLong HELD = new AtomicLong();

	static {
		Object unsafe = null;
		Method invokeCleaner = null;
		try {
			Class<?> type = Class.forName("sun.misc.Unsafe");
			Field field = type.getDeclaredField("theUnsafe");
			field.setAccessible(true);
			unsafe = field.get(null);
			invokeCleaner = type.getMethod("invokeCleaner", ByteBuffer.class);
		}
		catch (ReflectiveOperationException | RuntimeException ex) {
			// Without jdk.unsupported the memory is still returned, only later, by the GC.
		}
		UNSAFE = unsafe;
		INVOKE_CLEANER = invokeCleaner;
		NATIVE = NativeAllocator.load();
		log.debug("CPU backend memory: {}", describe());
	}

	private DirectMemory() {
	}

	/** Where the memory comes from, for the backend's description and logs. */
	static String describe() {
		return (NATIVE != null) ? "calloc (mmap from 1 MiB on Linux) through JNA, outside -XX:MaxDirectMemorySize"
				: "direct buffers (within -XX:MaxDirectMemorySize; JNA not available: " + NativeAllocator.unavailableReason()
						+ ")";
	}

	/** Whether memory comes from the C allocator rather than the JVM's direct-memory pool. */
	static boolean outsideDirectLimit() {
		return NATIVE != null;
	}

	/** Bytes allocated here and not yet freed. */
	static long heldBytes() {
		return HELD.get();
	}

	/** A zeroed buffer of {@code bytes} in native byte order; free it with {@link #free}. */
	static ByteBuffer allocate(long bytes) {
		if (bytes > Integer.MAX_VALUE) {
			throw new GpuOutOfMemoryException(bytes, "the CPU backend allocates at most 2 GiB per buffer");
		}
		ByteBuffer buffer;
		if (NATIVE != null) {
			buffer = NATIVE.allocate((int) bytes);
			if (buffer == null) {
				throw new GpuOutOfMemoryException(bytes, "calloc could not allocate " + bytes + " bytes");
			}
		}
		else {
			try {
				buffer = ByteBuffer.allocateDirect((int) bytes);
			}
			catch (OutOfMemoryError ex) {
				throw new GpuOutOfMemoryException(bytes, "direct memory exhausted (" + ex.getMessage()
						+ "); raise -XX:MaxDirectMemorySize, lower the CPU backend's memory use, or put JNA on the class "
						+ "path so that the CPU backend allocates outside the direct-memory limit");
			}
		}
		HELD.addAndGet(buffer.capacity());
		return buffer.order(ByteOrder.nativeOrder());
	}

	/** Frees a buffer {@link #allocate} returned (not a view of one); at most once. */
	static void free(ByteBuffer buffer) {
		HELD.addAndGet(-buffer.capacity());
		if (NATIVE != null) {
			NATIVE.free(buffer);
			return;
		}
		if (INVOKE_CLEANER != null && buffer.isDirect()) {
			try {
				INVOKE_CLEANER.invoke(UNSAFE, buffer);
			}
			catch (ReflectiveOperationException ex) {
				// Left to the GC.
			}
		}
	}

}
