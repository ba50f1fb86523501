package dev.gpucompute.contract.copy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.SplittableRandom;
import java.util.concurrent.CompletionException;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import dev.gpucompute.DeviceBuffer;
import dev.gpucompute.ElementType;
import dev.gpucompute.GpuStream;
import dev.gpucompute.HostArray;
import dev.gpucompute.HostBuffer;
import dev.gpucompute.StreamLease;

/**
 * Copies of {@link HostArray}s on every backend (docs/runtime.md, "Copies between host and device"):
 * float, int, long and double arrays and heap and direct {@code ByteBuffer}s give exact bytes at every
 * chunk boundary and offset; a range of an array copies exactly its elements, into a device buffer
 * and through a host buffer's {@code put} and {@code get}; a {@code ByteBuffer}'s region is fixed
 * when its HostArray is made. The context and helpers come from {@link CopyContractFixture}.
 */
public abstract class HostArrayCopyContractSuite extends CopyContractFixture {

	/** The bytes of {@code values} as the device holds them (native order). */
	private static byte[] nativeBytes(float[] values) {
		ByteBuffer buffer = ByteBuffer.allocate(values.length * Float.BYTES).order(ByteOrder.nativeOrder());
		buffer.asFloatBuffer().put(values);
		return buffer.array();
	}

	// ---- exact bytes ---------------------------------------------------------------------------------

	@Test
	void floatCopiesAreExactAtEveryChunkBoundaryAndOffset() {
		int perChunk = CHUNK / Float.BYTES;
		int[] sizes = { 1, perChunk - 1, perChunk, perChunk + 1, 2 * perChunk - 1, 2 * perChunk, 2 * perChunk + 1,
				3 * perChunk + 7, 10 * perChunk + 3 };
		int[] offsets = { 0, 1, perChunk - 1, perChunk + 3 };
		SplittableRandom random = new SplittableRandom(27);
		try (StreamLease lease = this.context.streams().acquire()) {
			GpuStream stream = lease.stream();
			for (int n : sizes) {
				for (int offset : offsets) {
					float[] data = new float[n];
					for (int i = 0; i < n; i++) {
						data[i] = Float.intBitsToFloat(random.nextInt()); // every bit pattern, NaN payloads included
					}
					int guard = 16;
					try (DeviceBuffer device = sentinels(4L * (offset + n + guard), stream)) {
						device.upload(HostArray.of(data), offset, stream).join();
						String what = n + " floats at element " + offset;
						assertPlaced(bytesOf(device, stream), nativeBytes(data), 4 * offset, what);
						float[] back = new float[offset + n];
						device.download(HostArray.of(back), stream).join();
						for (int i = 0; i < n; i++) {
							if (Float.floatToRawIntBits(back[offset + i]) != Float.floatToRawIntBits(data[i])) {
								throw new AssertionError(what + ": element " + i + " came back as " + back[offset + i]);
							}
						}
					}
				}
			}
		}
		assertNothingHeld();
	}

	@Test
	void intLongAndDoubleArraysRoundTripAcrossChunks() {
		SplittableRandom random = new SplittableRandom(28);
		int[] ints = random.ints(5 * CHUNK / Integer.BYTES / 2 + 3).toArray();
		long[] longs = random.longs(3 * CHUNK / Long.BYTES + 1).toArray();
		double[] doubles = random.doubles(2 * CHUNK / Double.BYTES - 1).toArray();
		try (StreamLease lease = this.context.streams().acquire()) {
			GpuStream stream = lease.stream();
			try (DeviceBuffer device = sentinels(8L * longs.length, stream)) {
				device.upload(HostArray.of(ints), stream).join();
				int[] intsBack = new int[ints.length];
				device.download(HostArray.of(intsBack), stream).join();
				assertThat(intsBack).isEqualTo(ints);
				device.upload(HostArray.of(longs), stream).join();
				long[] longsBack = new long[longs.length];
				device.download(HostArray.of(longsBack), stream).join();
				assertThat(longsBack).isEqualTo(longs);
				device.upload(HostArray.of(doubles), stream).join();
				double[] doublesBack = new double[doubles.length];
				device.download(HostArray.of(doublesBack), stream).join();
				assertThat(doublesBack).isEqualTo(doubles);
			}
		}
		assertNothingHeld();
	}

	/**
	 * A {@link HostArray} of part of an array copies exactly that part: an upload reads nothing outside
	 * it, a download and a {@code get} write nothing outside it, across chunk boundaries and at an element
	 * offset of the device buffer, for every element type.
	 */
	@ParameterizedTest
	@EnumSource(ElementType.class)
	void arrayRangesCopyOnlyTheirElementsAcrossChunks(ElementType type) {
		int size = type.bytes();
		int length = (2 * CHUNK + 3 * size + 1) / size; // crosses two chunk boundaries
		int from = 5;
		int total = from + length + 4;
		int deviceOffset = 3; // elements
		SplittableRandom random = new SplittableRandom(31 + type.ordinal());
		byte[] sourceBytes = randomBytes(random, total * size);
		byte[] rangeBytes = java.util.Arrays.copyOfRange(sourceBytes, from * size, (from + length) * size);
		String what = length + " " + type + " elements from index " + from;
		try (StreamLease lease = this.context.streams().acquire(); HostBuffer host = this.context.launcher().allocateHost(total * size)) {
			GpuStream stream = lease.stream();
			try (DeviceBuffer device = sentinels((long) (deviceOffset + length + 2) * size, stream)) {
				Object source = arrayOf(type, sourceBytes);
				device.upload(range(source, from, length), deviceOffset, stream).join();
				assertPlaced(bytesOf(device, stream), rangeBytes, deviceOffset * size, what);

				byte[] targetBytes = randomBytes(random, total * size);
				Object target = arrayOf(type, targetBytes);
				int to = 7;
				device.download(range(target, to, length), deviceOffset, stream).join();
				byte[] expected = targetBytes.clone();
				System.arraycopy(rangeBytes, 0, expected, to * size, rangeBytes.length);
				assertThat(bytesOf(target, type)).as(what + ", downloaded to index " + to).isEqualTo(expected);
			}
			// The same through a host buffer: put writes only the range's bytes, get fills only its elements.
			byte[] hostBefore = randomBytes(random, total * size);
			host.put(0, HostArray.of(hostBefore));
			host.put(2L * size, range(arrayOf(type, sourceBytes), from, length));
			byte[] hostExpected = hostBefore.clone();
			System.arraycopy(rangeBytes, 0, hostExpected, 2 * size, rangeBytes.length);
			byte[] hostNow = new byte[total * size];
			host.get(0, HostArray.of(hostNow));
			assertThat(hostNow).as(what + ", put into a host buffer at element 2").isEqualTo(hostExpected);
			byte[] targetBytes = randomBytes(random, total * size);
			Object target = arrayOf(type, targetBytes);
			host.get(2L * size, range(target, 1, length));
			byte[] expected = targetBytes.clone();
			System.arraycopy(rangeBytes, 0, expected, size, rangeBytes.length);
			assertThat(bytesOf(target, type)).as(what + ", read back from a host buffer to index 1").isEqualTo(expected);
		}
		assertNothingHeld();
	}

	/** An array of {@code type} holding {@code raw}'s bytes in native order. */
	private static Object arrayOf(ElementType type, byte[] raw) {
		ByteBuffer bytes = ByteBuffer.wrap(raw).order(ByteOrder.nativeOrder());
		int n = raw.length / type.bytes();
		return switch (type) {
			case FLOAT -> {
				float[] array = new float[n];
				bytes.asFloatBuffer().get(array);
				yield array;
			}
			case INT -> {
				int[] array = new int[n];
				bytes.asIntBuffer().get(array);
				yield array;
			}
			case LONG -> {
				long[] array = new long[n];
				bytes.asLongBuffer().get(array);
				yield array;
			}
			case DOUBLE -> {
				double[] array = new double[n];
				bytes.asDoubleBuffer().get(array);
				yield array;
			}
			case BYTE -> raw.clone();
		};
	}

	/** The native-order bytes of an array made by {@link #arrayOf}. */
	private static byte[] bytesOf(Object array, ElementType type) {
		int n = java.lang.reflect.Array.getLength(array);
		ByteBuffer bytes = ByteBuffer.allocate(n * type.bytes()).order(ByteOrder.nativeOrder());
		switch (type) {
			case FLOAT -> bytes.asFloatBuffer().put((float[]) array);
			case INT -> bytes.asIntBuffer().put((int[]) array);
			case LONG -> bytes.asLongBuffer().put((long[]) array);
			case DOUBLE -> bytes.asDoubleBuffer().put((double[]) array);
			case BYTE -> bytes.put((byte[]) array);
		}
		return bytes.array();
	}

	/** {@code HostArray.of(array, from, length)} for an array of any element type. */
	private static HostArray range(Object array, int from, int length) {
		if (array instanceof float[] floats) {
			return HostArray.of(floats, from, length);
		}
		if (array instanceof int[] ints) {
			return HostArray.of(ints, from, length);
		}
		if (array instanceof long[] longs) {
			return HostArray.of(longs, from, length);
		}
		if (array instanceof double[] doubles) {
			return HostArray.of(doubles, from, length);
		}
		return HostArray.of((byte[]) array, from, length);
	}

	@Test
	void byteBufferCopiesAreExactAtEveryChunkBoundaryAndOffset() {
		int[] sizes = { 1, CHUNK - 1, CHUNK, CHUNK + 1, 3 * CHUNK + 5 };
		int[] deviceOffsets = { 0, 1, CHUNK - 1 };
		SplittableRandom random = new SplittableRandom(29);
		try (StreamLease lease = this.context.streams().acquire()) {
			GpuStream stream = lease.stream();
			for (boolean direct : new boolean[] { false, true }) {
				for (int n : sizes) {
					for (int offset : deviceOffsets) {
						String what = n + " bytes from a " + (direct ? "direct" : "heap") + " buffer at device offset " + offset;
						byte[] data = randomBytes(random, n);
						int position = 3;
						ByteBuffer source = direct ? ByteBuffer.allocateDirect(position + n + 5) : ByteBuffer.allocate(position + n + 5);
						source.position(position);
						source.put(data);
						source.position(position).limit(position + n);
						try (DeviceBuffer device = sentinels(offset + n + 7, stream)) {
							device.upload(HostArray.of(source), offset, stream).join();
							assertThat(source.position()).as("source position").isEqualTo(position);
							assertPlaced(bytesOf(device, stream), data, offset, what);
							ByteBuffer target = direct ? ByteBuffer.allocateDirect(n + 9) : ByteBuffer.allocate(n + 9);
							for (int i = 0; i < target.capacity(); i++) {
								target.put(i, SENTINEL);
							}
							target.position(4).limit(4 + n);
							device.download(HostArray.of(target), offset, stream).join();
							assertThat(target.position()).as("destination position").isEqualTo(4);
							byte[] back = new byte[target.capacity()];
							target.clear().get(back);
							assertPlaced(back, data, 4, what + ", downloaded");
						}
					}
				}
			}
		}
		assertNothingHeld();
	}

	/**
	 * A {@code ByteBuffer}'s region is fixed when its HostArray is made; a limit lowered below the
	 * region's end afterwards fails the copies that use it, and holds nothing.
	 */
	@Test
	void aByteBufferLimitLoweredBelowItsRegionFailsItsCopies() {
		try (StreamLease lease = this.context.streams().acquire(); DeviceBuffer device = sentinels(64, lease.stream())) {
			GpuStream stream = lease.stream();
			ByteBuffer source = ByteBuffer.allocate(32);
			HostArray from = HostArray.of(source);
			source.position(30); // the position may move: the region does not
			device.upload(from, stream).join();
			source.limit(16);
			assertThatThrownBy(() -> device.upload(from, stream).join()).isInstanceOf(IndexOutOfBoundsException.class);
			ByteBuffer target = ByteBuffer.allocate(32);
			HostArray into = HostArray.of(target);
			target.limit(16);
			assertThatThrownBy(() -> device.download(into, stream).join()).isInstanceOf(CompletionException.class)
				.hasRootCauseInstanceOf(IndexOutOfBoundsException.class);
			stream.synchronize();
		}
		assertNothingHeld();
	}

}
