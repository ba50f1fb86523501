package dev.gpucompute;

import java.lang.reflect.Array;
import java.nio.ByteBuffer;
import java.util.Locale;
import java.util.Objects;

/**
 * A run of elements of a Java array, or the bytes of a {@link ByteBuffer}, with their element type:
 * what the typed copies read from and write into ({@link DeviceBuffer#upload(HostArray, GpuStream)},
 * {@link DeviceBuffer#download(HostArray, GpuStream)}, {@link GpuLauncher#upload(HostArray)},
 * {@link HostBuffer#put(long, HostArray)}, {@link HostBuffer#get(long, HostArray)}). One family of
 * copies takes it instead of an overload per array type:
 * <pre>{@code
 * buffer.upload(HostArray.of(floats), stream);
 * buffer.download(HostArray.of(ints, 8, 16), stream).join(); // ints[8..24) from the buffer's start
 * }</pre>
 *
 * <p>It refers to the array or buffer, it does not copy it: it is a cheap, immutable description of
 * a region, fixed when it is made (for a {@code ByteBuffer}: the bytes between its position and its
 * limit at that time; moving its position later does not change the region, but keep its limit at or
 * past the region's end, or the copies that use it fail). An upload (or a
 * {@code put}) copies the region's data before it returns, so the array may be reused at once; a
 * download writes the region when the copy has run, so read it only after the copy's future completed
 * (a {@code get} has written it when it returns). Copies never change a {@code ByteBuffer}'s position or
 * limit, and copy its bytes as they are (its byte order is not applied); arrays are copied in the
 * platform's byte order, as the device reads them.
 *
 * <p>Sharing one across threads is as safe as sharing the array or buffer it refers to: it adds no
 * state of its own, and it does nothing to order the copies that use it.
 */
public final class HostArray {

	// A float[], int[], long[], double[], byte[] or ByteBuffer, by reference.
	private final Object array;

	private final ElementType type;

	private final int offset;

	private final int length;

	private HostArray(Object array, ElementType type, int offset, int length) {
		this.array = array;
		this.type = type;
		this.offset = offset;
		this.length = length;
	}

	/** All of {@code array}. */
	public static HostArray of(float[] array) {
		return of(array, 0, Objects.requireNonNull(array, "array").length);
	}

	/**
	 * Elements {@code [offset, offset + length)} of {@code array}.
	 * @throws IndexOutOfBoundsException when that range does not lie within the array
	 */
	public static HostArray of(float[] array, int offset, int length) {
		Objects.requireNonNull(array, "array");
		return new HostArray(array, ElementType.FLOAT, checked(offset, length, array.length, "a float[]"), length);
	}

	/** All of {@code array}. */
	public static HostArray of(int[] array) {
		return of(array, 0, Objects.requireNonNull(array, "array").length);
	}

	/**
	 * Elements {@code [offset, offset + length)} of {@code array}.
	 * @throws IndexOutOfBoundsException when that range does not lie within the array
	 */
	public static HostArray of(int[] array, int offset, int length) {
		Objects.requireNonNull(array, "array");
		return new HostArray(array, ElementType.INT, checked(offset, length, array.length, "an int[]"), length);
	}

	/** All of {@code array}. */
	public static HostArray of(long[] array) {
		return of(array, 0, Objects.requireNonNull(array, "array").length);
	}

	/**
	 * Elements {@code [offset, offset + length)} of {@code array}.
	 * @throws IndexOutOfBoundsException when that range does not lie within the array
	 */
	public static HostArray of(long[] array, int offset, int length) {
		Objects.requireNonNull(array, "array");
		return new HostArray(array, ElementType.LONG, checked(offset, length, array.length, "a long[]"), length);
	}

	/** All of {@code array}. */
	public static HostArray of(double[] array) {
		return of(array, 0, Objects.requireNonNull(array, "array").length);
	}

	/**
	 * Elements {@code [offset, offset + length)} of {@code array}.
	 * @throws IndexOutOfBoundsException when that range does not lie within the array
	 */
	public static HostArray of(double[] array, int offset, int length) {
		Objects.requireNonNull(array, "array");
		return new HostArray(array, ElementType.DOUBLE, checked(offset, length, array.length, "a double[]"), length);
	}

	/** All of {@code array}. */
	public static HostArray of(byte[] array) {
		return of(array, 0, Objects.requireNonNull(array, "array").length);
	}

	/**
	 * Bytes {@code [offset, offset + length)} of {@code array}.
	 * @throws IndexOutOfBoundsException when that range does not lie within the array
	 */
	public static HostArray of(byte[] array, int offset, int length) {
		Objects.requireNonNull(array, "array");
		return new HostArray(array, ElementType.BYTE, checked(offset, length, array.length, "a byte[]"), length);
	}

	/**
	 * The remaining bytes of {@code buffer}, from its position to its limit as they are now, of
	 * element type {@link ElementType#BYTE}. Heap, direct and read-only buffers are accepted (a
	 * read-only one only as a source: a download or {@code get} into it throws
	 * {@link IllegalArgumentException}). Copies use absolute indexes: they leave its position and
	 * limit alone, so threads may share the buffer.
	 */
	public static HostArray of(ByteBuffer buffer) {
		Objects.requireNonNull(buffer, "buffer");
		return new HostArray(buffer, ElementType.BYTE, buffer.position(), buffer.remaining());
	}

	private static int checked(int offset, int length, int arrayLength, String what) {
		if (offset < 0 || length < 0 || offset > arrayLength - length) {
			throw new IndexOutOfBoundsException("The range of " + length + " elements from index " + offset
					+ " is out of bounds for length " + arrayLength + " (" + what + ")");
		}
		return offset;
	}

	/** The type of its elements ({@link ElementType#BYTE} for a {@code ByteBuffer}). */
	public ElementType type() {
		return this.type;
	}

	/** Its number of elements (bytes for a {@code byte[]} or {@code ByteBuffer}). */
	public int length() {
		return this.length;
	}

	/** Its size in bytes: {@link #length()} elements of {@link #type()}. */
	public long byteSize() {
		return (long) this.length * this.type.bytes();
	}

	/**
	 * Whether copies may only read it: {@code true} for a read-only {@code ByteBuffer}, which a
	 * download or {@link #putBytes} refuses.
	 */
	public boolean isReadOnly() {
		return this.array instanceof ByteBuffer buffer && buffer.isReadOnly();
	}

	/**
	 * Copies bytes of the region, from byte {@code byteOffset} of it on (0 is its first element's first
	 * byte), into {@code target}: as many as {@code target} has remaining, from its position on. An
	 * array's elements are written in {@code target}'s byte order (a direct buffer of native order gets
	 * them as the device reads them), a {@code ByteBuffer}'s bytes as they are. Neither {@code target}'s
	 * position nor that of the buffer this refers to moves. What the copies to a device pack their
	 * chunks with.
	 * @throws IllegalArgumentException when the offset or the length is not a whole number of elements
	 * @throws IndexOutOfBoundsException when those bytes do not all lie within the region
	 */
	public void getBytes(long byteOffset, ByteBuffer target) {
		int at = element(byteOffset, target.remaining());
		int count = target.remaining() / this.type.bytes();
		switch (this.type) {
			case FLOAT -> target.asFloatBuffer().put((float[]) this.array, at, count);
			case INT -> target.asIntBuffer().put((int[]) this.array, at, count);
			case LONG -> target.asLongBuffer().put((long[]) this.array, at, count);
			case DOUBLE -> target.asDoubleBuffer().put((double[]) this.array, at, count);
			case BYTE -> {
				if (this.array instanceof ByteBuffer buffer) {
					target.put(target.position(), buffer, at, count);
				}
				else {
					target.put(target.position(), (byte[]) this.array, at, count);
				}
			}
		}
	}

	/**
	 * Copies {@code source}'s remaining bytes (from its position on) into the region, from byte
	 * {@code byteOffset} of it on: the inverse of {@link #getBytes}, in {@code source}'s byte order for
	 * an array's elements. Neither {@code source}'s position nor that of the buffer this refers to
	 * moves. What the copies from a device unpack their chunks with.
	 * @throws IllegalArgumentException when the offset or the length is not a whole number of elements,
	 * or the region is a read-only {@code ByteBuffer}
	 * @throws IndexOutOfBoundsException when those bytes do not all lie within the region
	 */
	public void putBytes(long byteOffset, ByteBuffer source) {
		if (isReadOnly()) {
			throw new IllegalArgumentException("The region is a read-only ByteBuffer");
		}
		int at = element(byteOffset, source.remaining());
		int count = source.remaining() / this.type.bytes();
		switch (this.type) {
			case FLOAT -> source.asFloatBuffer().get((float[]) this.array, at, count);
			case INT -> source.asIntBuffer().get((int[]) this.array, at, count);
			case LONG -> source.asLongBuffer().get((long[]) this.array, at, count);
			case DOUBLE -> source.asDoubleBuffer().get((double[]) this.array, at, count);
			case BYTE -> {
				if (this.array instanceof ByteBuffer buffer) {
					buffer.put(at, source, source.position(), count);
				}
				else {
					source.get(source.position(), (byte[]) this.array, at, count);
				}
			}
		}
	}

	/** The index in the array (or buffer) of the element at {@code byteOffset}, checked with the length. */
	private int element(long byteOffset, int bytes) {
		int size = this.type.bytes();
		if (byteOffset % size != 0 || bytes % size != 0) {
			throw new IllegalArgumentException("Copies of " + this.type + " elements take whole elements of " + size
					+ " bytes: offset " + byteOffset + ", " + bytes + " bytes");
		}
		if (byteOffset < 0 || byteOffset > byteSize() - bytes) {
			throw new IndexOutOfBoundsException("Bytes [" + byteOffset + ", " + (byteOffset + bytes)
					+ ") are out of bounds for a region of " + byteSize() + " bytes");
		}
		return this.offset + (int) (byteOffset / size);
	}

	/**
	 * The index of its first element in the array it refers to; for a {@code ByteBuffer}, the
	 * buffer's position when {@link #of(ByteBuffer)} was called.
	 */
	public int offset() {
		return this.offset;
	}

	@Override
	public String toString() {
		String of = (this.array instanceof ByteBuffer buffer) ? "ByteBuffer[capacity " + buffer.capacity() + "]"
				: this.type.name().toLowerCase(Locale.ROOT) + "[" + Array.getLength(this.array) + "]";
		return "HostArray[" + this.length + " " + this.type + " elements from index " + this.offset + " of " + of + "]";
	}

}
