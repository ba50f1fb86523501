package dev.gpucompute.cpu;

import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

import dev.gpucompute.GpuOutOfMemoryException;

/**
 * Allocates and frees direct buffers deterministically. {@code ByteBuffer.allocateDirect} memory is
 * otherwise only returned when the garbage collector finds the buffer unreachable, which would make
 * "memory back to its start" untestable and let a busy service run out of direct memory.
 */
final class DirectMemory {

	private static final Object UNSAFE;

	private static final Method INVOKE_CLEANER;

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
	}

	private DirectMemory() {
	}

	static ByteBuffer allocate(long bytes) {
		if (bytes > Integer.MAX_VALUE) {
			throw new GpuOutOfMemoryException(bytes, "the CPU backend allocates at most 2 GiB per buffer");
		}
		try {
			return ByteBuffer.allocateDirect((int) bytes).order(ByteOrder.nativeOrder());
		}
		catch (OutOfMemoryError ex) {
			throw new GpuOutOfMemoryException(bytes, "direct memory exhausted (" + ex.getMessage()
					+ "); raise -XX:MaxDirectMemorySize or lower gpu.cpu memory use");
		}
	}

	static void free(ByteBuffer buffer) {
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
