package dev.gpucompute;

/**
 * The type of the elements of a {@link DeviceBuffer}, for allocating by element count
 * ({@link GpuLauncher#allocate(long, ElementType)}) instead of by bytes; also the type of a
 * {@link HostArray}'s elements, in which a typed copy's element offset is counted.
 */
public enum ElementType {

	/** {@code char}/{@code uint8_t}: 1 byte. */
	BYTE(1),

	/** {@code int}: 4 bytes. */
	INT(4),

	/** {@code long long}: 8 bytes. */
	LONG(8),

	/** {@code float}: 4 bytes. */
	FLOAT(4),

	/** {@code double}: 8 bytes. */
	DOUBLE(8);

	private final int bytes;

	ElementType(int bytes) {
		this.bytes = bytes;
	}

	/** Bytes per element. */
	public int bytes() {
		return this.bytes;
	}

	/**
	 * Bytes of {@code count} elements.
	 * @throws InvalidBufferRangeException when {@code count} is negative or the size does not fit a {@code long}
	 */
	public long byteSize(long count) {
		if (count < 0 || count > Long.MAX_VALUE / this.bytes) {
			throw new InvalidBufferRangeException(count + " elements of " + name() + " (" + this.bytes + " bytes each) "
					+ ((count < 0) ? "is not a size: it must not be negative" : "do not fit in a long of bytes"));
		}
		return count * this.bytes;
	}

}
