package dev.gpucompute.sample.storage;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.zip.CRC32C;

/**
 * The byte layout of a {@link WriteAheadLog} record, shared by the {@link LogRecordWriter} that
 * writes records and the {@link LogReplay} that reads them back.
 *
 * <p>A record, little-endian: int payload length, int CRC-32C of the payload, payload. An upsert's
 * payload is: byte type ({@value #UPSERT}), int row count, int dimension, {@code count} ids as
 * (short UTF-8 length, bytes), then {@code count * dimension} float32 values.
 *
 * <p>Stateless; every method is safe from any thread.
 */
final class LogRecordFormat {

	/** Bytes of a record's header: the payload length and its checksum. */
	static final int HEADER = 8;

	/** The type byte of an upsert payload, the only type there is. */
	static final byte UPSERT = 1;

	/** Largest payload a record may have; a bigger length field is damage, not a record. */
	static final int MAX_PAYLOAD = Integer.MAX_VALUE - 64;

	/** Longest id a record can hold, in UTF-8 bytes (its length is stored in 16 bits). */
	static final int MAX_ID_BYTES = 0xFFFF;

	/** Smallest payload: type, count and dimension. */
	static final int MIN_PAYLOAD = 1 + 4 + 4;

	/** Bytes of a record's header and the start of its payload (type, count, dimension). */
	static final int PREFIX = HEADER + MIN_PAYLOAD;

	private LogRecordFormat() {
	}

	/**
	 * The payload size of an upsert record.
	 * @param idBytes the ids' UTF-8 bytes together
	 */
	static long payloadBytes(int count, int dimension, long idBytes) {
		return 1 + 4 + 4 + (long) count * dimension * Float.BYTES + 2L * count + idBytes;
	}

	/**
	 * The first {@code count} ids in UTF-8.
	 * @throws IllegalArgumentException when one is longer than {@value #MAX_ID_BYTES} bytes
	 */
	static byte[][] encodeIds(String[] ids, int count) {
		byte[][] encoded = new byte[count][];
		for (int i = 0; i < count; i++) {
			encoded[i] = ids[i].getBytes(StandardCharsets.UTF_8);
			if (encoded[i].length > MAX_ID_BYTES) {
				throw new IllegalArgumentException("id longer than " + MAX_ID_BYTES + " UTF-8 bytes");
			}
		}
		return encoded;
	}

	/** The checksum a header holds for {@code payload}'s remaining bytes (its position is left alone). */
	static int checksum(ByteBuffer payload) {
		CRC32C crc = new CRC32C();
		crc.update(payload.duplicate());
		return (int) crc.getValue();
	}

	/**
	 * Reads an upsert payload whose checksum matched.
	 * @param payload exactly one payload, little-endian; it is consumed
	 * @throws IllegalStateException when it is not a well-formed upsert (an unknown type, counts the
	 * payload cannot hold, bytes left after the values)
	 */
	static WriteAheadLog.Upsert decode(ByteBuffer payload) {
		byte type = payload.get();
		if (type != UPSERT) {
			throw new IllegalStateException("unknown record type " + type);
		}
		int count = payload.getInt();
		int dimension = payload.getInt();
		if (count < 0 || dimension < 1 || (long) count * dimension * Float.BYTES > payload.remaining()) {
			throw new IllegalStateException("implausible record: " + count + " rows of dimension " + dimension);
		}
		String[] ids = new String[count];
		for (int i = 0; i < count; i++) {
			int length = Short.toUnsignedInt(payload.getShort());
			byte[] bytes = new byte[length];
			payload.get(bytes);
			ids[i] = new String(bytes, StandardCharsets.UTF_8);
		}
		float[] rows = new float[count * dimension];
		payload.asFloatBuffer().get(rows);
		payload.position(payload.position() + rows.length * Float.BYTES);
		if (payload.hasRemaining()) {
			throw new IllegalStateException(payload.remaining() + " bytes after the record's values");
		}
		return new WriteAheadLog.Upsert(ids, dimension, rows);
	}

}
