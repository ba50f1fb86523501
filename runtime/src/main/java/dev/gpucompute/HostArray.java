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
	 * The array it is a region of ({@code float[]}, {@code int[]}, {@code long[]}, {@code double[]}
	 * or {@code byte[]}, by {@link #type()}), or the {@code ByteBuffer} given to {@link #of(ByteBuffer)};
	 * the object itself, not a copy. For the runtime's copies, which read and write it.
	 */
	public Object array() {
		return this.array;
	}

	/**
	 * The index of its first element in {@link #array()}; for a {@code ByteBuffer}, the buffer's
	 * position when {@link #of(ByteBuffer)} was called.
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
