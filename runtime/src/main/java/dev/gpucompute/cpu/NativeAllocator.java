package dev.gpucompute.cpu;

import java.nio.ByteBuffer;

import com.sun.jna.Native;
import com.sun.jna.Platform;
import com.sun.jna.Pointer;

/**
 * The C library's {@code calloc} and {@code free}, bound through JNA's direct mapping. JNA is an
 * optional dependency: {@link #load()} is the only entry point, and it answers {@code null} where
 * JNA or its native part is missing, so this class's JNA references are never resolved then.
 */
final class NativeAllocator {

	private static volatile String unavailable = "not tried";

	private NativeAllocator() {
	}

	/** The allocator, or {@code null} with the reason kept for {@link #unavailableReason()}. */
	static NativeAllocator load() {
		try {
			if (Native.POINTER_SIZE != 8) {
				unavailable = "a " + (Native.POINTER_SIZE * 8) + "-bit JVM";
				return null;
			}
			Native.register(LibC.class, Platform.C_LIBRARY_NAME);
			NativeAllocator allocator = new NativeAllocator();
			// One round trip proves the binding before any buffer depends on it.
			ByteBuffer probe = allocator.allocate(64);
			if (probe == null) {
				unavailable = "calloc returned NULL for 64 bytes";
				return null;
			}
			allocator.free(probe);
			return allocator;
		}
		catch (LinkageError | RuntimeException ex) {
			// NoClassDefFoundError without JNA, UnsatisfiedLinkError where its native part cannot load.
			unavailable = ex.toString();
			return null;
		}
	}

	static String unavailableReason() {
		return unavailable;
	}

	/** A zeroed buffer of {@code bytes}, or {@code null} when {@code calloc} fails. */
	ByteBuffer allocate(int bytes) {
		long address = LibC.calloc(1, Math.max(1, bytes));
		if (address == 0) {
			return null;
		}
		return new Pointer(address).getByteBuffer(0, bytes);
	}

	void free(ByteBuffer buffer) {
		LibC.free(Pointer.nativeValue(Native.getDirectBufferPointer(buffer)));
	}

	/** {@code size_t} is 64 bits wide on every platform this binding is registered on (checked above). */
	private static final class LibC {

		static native long calloc(long count, long size);

		static native void free(long address);

	}

}
