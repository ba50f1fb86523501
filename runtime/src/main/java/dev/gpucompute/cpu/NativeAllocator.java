package dev.gpucompute.cpu;

import java.nio.ByteBuffer;

import com.sun.jna.Native;
import com.sun.jna.Platform;
import com.sun.jna.Pointer;
import org.jspecify.annotations.Nullable;

/**
 * The C library's {@code calloc} and {@code free}, bound through JNA's direct mapping, and on Linux
 * {@code mmap} and {@code munmap} for large buffers. JNA is an optional dependency: {@link #load()}
 * is the only entry point, and it answers {@code null} where JNA or its native part is missing, so
 * this class's JNA references are never resolved then.
 *
 * <p>Why large buffers bypass {@code malloc} on Linux: glibc raises its mmap threshold to the size of
 * the largest block freed (up to 32 MiB), after which blocks that size come from its arenas, and a
 * freed arena block is kept for reuse rather than returned. A service that allocates and frees
 * scratch buffers of tens of megabytes from several threads then keeps hundreds of megabytes
 * resident that no buffer uses. An anonymous mapping is zeroed, resident only where written, and
 * returned whole by {@code munmap}. Whether a buffer was mapped follows from its capacity alone,
 * so freeing needs no bookkeeping.
 */
final class NativeAllocator {

	/** Buffers at least this large are mapped rather than allocated (Linux). */
	static final int MAP_THRESHOLD = 1 << 20;

	private static final int PROT_READ_WRITE = 0x1 | 0x2;

	/** {@code MAP_PRIVATE | MAP_ANONYMOUS} on Linux (every architecture JNA supports there). */
	private static final int MAP_PRIVATE_ANONYMOUS = 0x02 | 0x20;

	private static final long MAP_FAILED = -1;

	private final boolean mapLarge;

	private static volatile String unavailable = "not tried";

	private NativeAllocator(boolean mapLarge) {
		this.mapLarge = mapLarge;
	}

	/** The allocator, or {@code null} with the reason kept for {@link #unavailableReason()}. */
	static @Nullable NativeAllocator load() {
		try {
			if (Native.POINTER_SIZE != 8) {
				unavailable = "a " + (Native.POINTER_SIZE * 8) + "-bit JVM";
				return null;
			}
			Native.register(LibC.class, Platform.C_LIBRARY_NAME);
			boolean mapLarge = Platform.isLinux();
			if (mapLarge) {
				Native.register(Mman.class, Platform.C_LIBRARY_NAME);
			}
			NativeAllocator allocator = new NativeAllocator(mapLarge);
			// One round trip proves the binding before any buffer depends on it.
			ByteBuffer probe = allocator.allocate(64);
			if (probe == null) {
				unavailable = "calloc returned NULL for 64 bytes";
				return null;
			}
			allocator.free(probe);
			if (mapLarge) {
				ByteBuffer mapped = allocator.allocate(MAP_THRESHOLD);
				if (mapped == null) {
					unavailable = "mmap failed for " + MAP_THRESHOLD + " bytes";
					return null;
				}
				allocator.free(mapped);
			}
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

	/** A zeroed buffer of {@code bytes}, or {@code null} when the memory could not be had. */
	@Nullable ByteBuffer allocate(int bytes) {
		long address;
		if (mapped(bytes)) {
			address = Mman.mmap(0, bytes, PROT_READ_WRITE, MAP_PRIVATE_ANONYMOUS, -1, 0);
			if (address == MAP_FAILED) {
				return null;
			}
		}
		else {
			address = LibC.calloc(1, Math.max(1, bytes));
			if (address == 0) {
				return null;
			}
		}
		return new Pointer(address).getByteBuffer(0, bytes);
	}

	void free(ByteBuffer buffer) {
		long address = Pointer.nativeValue(Native.getDirectBufferPointer(buffer));
		if (mapped(buffer.capacity())) {
			Mman.munmap(address, buffer.capacity());
		}
		else {
			LibC.free(address);
		}
	}

	private boolean mapped(int bytes) {
		return this.mapLarge && bytes >= MAP_THRESHOLD;
	}

	/** {@code size_t} is 64 bits wide on every platform this binding is registered on (checked above). */
	private static final class LibC {

		static native long calloc(long count, long size);

		static native void free(long address);

	}

	/** {@code off_t} is 64 bits wide on 64-bit Linux. */
	private static final class Mman {

		static native long mmap(long address, long length, int protection, int flags, int fd, long offset);

		static native int munmap(long address, long length);

	}

}
