package dev.gpucompute;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.ByteBuffer;
import java.util.List;

import org.assertj.core.api.ThrowableAssert.ThrowingCallable;
import org.junit.jupiter.api.Test;

/** {@link HostArray}: what each factory describes, and the ranges it refuses. */
class HostArrayTests {

	@Test
	void wholeArraysHaveTheirTypeLengthAndByteSize() {
		float[] floats = new float[3];
		int[] ints = new int[5];
		long[] longs = new long[2];
		double[] doubles = new double[7];
		byte[] bytes = new byte[11];
		assertRegion(HostArray.of(floats), floats, ElementType.FLOAT, 0, 3, 12);
		assertRegion(HostArray.of(ints), ints, ElementType.INT, 0, 5, 20);
		assertRegion(HostArray.of(longs), longs, ElementType.LONG, 0, 2, 16);
		assertRegion(HostArray.of(doubles), doubles, ElementType.DOUBLE, 0, 7, 56);
		assertRegion(HostArray.of(bytes), bytes, ElementType.BYTE, 0, 11, 11);
		assertRegion(HostArray.of(new float[0]), null, ElementType.FLOAT, 0, 0, 0);
	}

	@Test
	void subRangesCountElementsOfTheirType() {
		float[] floats = new float[10];
		int[] ints = new int[10];
		long[] longs = new long[10];
		double[] doubles = new double[10];
		byte[] bytes = new byte[10];
		assertRegion(HostArray.of(floats, 2, 5), floats, ElementType.FLOAT, 2, 5, 20);
		assertRegion(HostArray.of(ints, 9, 1), ints, ElementType.INT, 9, 1, 4);
		assertRegion(HostArray.of(longs, 0, 10), longs, ElementType.LONG, 0, 10, 80);
		assertRegion(HostArray.of(doubles, 3, 4), doubles, ElementType.DOUBLE, 3, 4, 32);
		assertRegion(HostArray.of(bytes, 4, 6), bytes, ElementType.BYTE, 4, 6, 6);
		// Empty ranges anywhere in the array, its end included.
		assertRegion(HostArray.of(floats, 10, 0), floats, ElementType.FLOAT, 10, 0, 0);
		assertRegion(HostArray.of(new int[0], 0, 0), null, ElementType.INT, 0, 0, 0);
	}

	@Test
	void aRangeOutsideTheArrayIsRefusedNamingTheRange() {
		assertOutOfBounds(() -> HostArray.of(new float[4], 2, 3),
				"The range of 3 elements from index 2 is out of bounds for length 4 (a float[])");
		assertOutOfBounds(() -> HostArray.of(new int[4], -1, 2),
				"The range of 2 elements from index -1 is out of bounds for length 4 (an int[])");
		assertOutOfBounds(() -> HostArray.of(new long[4], 1, -1),
				"The range of -1 elements from index 1 is out of bounds for length 4 (a long[])");
		assertOutOfBounds(() -> HostArray.of(new double[4], 5, 0), "from index 5 is out of bounds for length 4 (a double[])");
		// offset + length overflows an int: still refused, not wrapped around.
		assertOutOfBounds(() -> HostArray.of(new byte[4], Integer.MAX_VALUE, 2), "from index 2147483647 is out of bounds");
		assertOutOfBounds(() -> HostArray.of(new byte[4], 2, Integer.MAX_VALUE), "The range of 2147483647 elements");
	}

	@Test
	void nullArraysAreRefusedNamingTheParameter() {
		List<ThrowingCallable> nulls = List.of(() -> HostArray.of((float[]) null), () -> HostArray.of((int[]) null),
				() -> HostArray.of((long[]) null), () -> HostArray.of((double[]) null), () -> HostArray.of((byte[]) null),
				() -> HostArray.of((float[]) null, 0, 0), () -> HostArray.of((int[]) null, 0, 0),
				() -> HostArray.of((long[]) null, 0, 0), () -> HostArray.of((double[]) null, 0, 0),
				() -> HostArray.of((byte[]) null, 0, 0));
		for (ThrowingCallable call : nulls) {
			assertThatThrownBy(call).isInstanceOf(NullPointerException.class).hasMessage("array");
		}
		assertThatThrownBy(() -> HostArray.of((ByteBuffer) null)).isInstanceOf(NullPointerException.class)
			.hasMessage("buffer");
	}

	@Test
	void aByteBufferIsItsRemainingBytesAsTheyAreWhenTheRegionIsMade() {
		ByteBuffer buffer = ByteBuffer.allocate(32).position(4).limit(20);
		HostArray region = HostArray.of(buffer);
		assertRegion(region, buffer, ElementType.BYTE, 4, 16, 16);
		// The region is fixed: moving the buffer afterwards changes neither the region nor the buffer's
		// own state as the caller set it.
		buffer.position(10).limit(12);
		assertThat(region.offset()).isEqualTo(4);
		assertThat(region.length()).isEqualTo(16);
		assertThat(buffer.position()).isEqualTo(10);
		assertThat(buffer.limit()).isEqualTo(12);
	}

	@Test
	void directReadOnlyAndEmptyByteBuffersAreRegionsToo() {
		ByteBuffer direct = ByteBuffer.allocateDirect(8).position(3);
		assertRegion(HostArray.of(direct), direct, ElementType.BYTE, 3, 5, 5);
		ByteBuffer readOnly = ByteBuffer.allocate(8).asReadOnlyBuffer();
		assertRegion(HostArray.of(readOnly), readOnly, ElementType.BYTE, 0, 8, 8);
		ByteBuffer empty = ByteBuffer.allocate(8).position(8);
		assertRegion(HostArray.of(empty), empty, ElementType.BYTE, 8, 0, 0);
	}

	@Test
	void toStringNamesTheRangeAndTheArray() {
		assertThat(HostArray.of(new float[10], 2, 5)).hasToString("HostArray[5 FLOAT elements from index 2 of float[10]]");
		assertThat(HostArray.of(ByteBuffer.allocate(16).position(4))).hasToString(
				"HostArray[12 BYTE elements from index 4 of ByteBuffer[capacity 16]]");
	}

	@Test
	void getBytesAndPutBytesMoveWholeElementsOfTheRegionOnly() {
		int[] ints = { 1, 2, 3, 4, 5 };
		HostArray region = HostArray.of(ints, 1, 3);
		ByteBuffer two = ByteBuffer.allocateDirect(2 * Integer.BYTES).order(java.nio.ByteOrder.nativeOrder());
		region.getBytes(Integer.BYTES, two);
		assertThat(two.getInt(0)).isEqualTo(3);
		assertThat(two.getInt(Integer.BYTES)).isEqualTo(4);
		assertThat(two.position()).as("the target's position does not move").isZero();
		two.putInt(0, 30).putInt(Integer.BYTES, 40);
		region.putBytes(0, two);
		assertThat(ints).containsExactly(1, 30, 40, 4, 5);
		assertThatThrownBy(() -> region.getBytes(2 * Integer.BYTES, two)).isInstanceOf(IndexOutOfBoundsException.class)
			.hasMessageContaining("out of bounds for a region of 12 bytes");
		assertThatThrownBy(() -> region.getBytes(1, two)).isInstanceOf(IllegalArgumentException.class)
			.hasMessageContaining("whole elements");
		HostArray readOnly = HostArray.of(ByteBuffer.allocate(8).asReadOnlyBuffer());
		assertThat(readOnly.isReadOnly()).isTrue();
		assertThat(region.isReadOnly()).isFalse();
		assertThatThrownBy(() -> readOnly.putBytes(0, ByteBuffer.allocate(8))).isInstanceOf(IllegalArgumentException.class)
			.hasMessageContaining("read-only");
	}

	/** Asserts what {@code region} describes; {@code array} null skips the identity check. */
	private static void assertRegion(HostArray region, Object array, ElementType type, int offset, int length, long bytes) {
		if (array instanceof float[] floats && floats.length > offset) {
			// It refers to the array, it does not copy it: a change after it was made is what it reads.
			floats[offset] = 42f;
			java.nio.ByteBuffer first = java.nio.ByteBuffer.allocate(Float.BYTES).order(java.nio.ByteOrder.nativeOrder());
			region.getBytes(0, first);
			assertThat(first.getFloat(0)).as("the array itself, not a copy").isEqualTo(42f);
		}
		assertThat(region.type()).isEqualTo(type);
		assertThat(region.offset()).isEqualTo(offset);
		assertThat(region.length()).isEqualTo(length);
		assertThat(region.byteSize()).isEqualTo(bytes);
	}

	private static void assertOutOfBounds(ThrowingCallable call, String message) {
		assertThatThrownBy(call).isInstanceOf(IndexOutOfBoundsException.class).hasMessageContaining(message);
	}

}
