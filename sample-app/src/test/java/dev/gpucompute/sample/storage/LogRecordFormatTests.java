package dev.gpucompute.sample.storage;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.zip.CRC32C;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The log's record format on its own: sizes, id encoding and its limit, the checksum, and decoding
 * a payload, including the payloads a replay must call unreadable (their messages end up in its
 * "an unreadable record (...)" problem).
 */
class LogRecordFormatTests {

	private static ByteBuffer payload(byte type, int count, int dimension, String[] ids, float[] rows, int extra) {
		ByteBuffer payload = ByteBuffer.allocate(256).order(ByteOrder.LITTLE_ENDIAN);
		payload.put(type).putInt(count).putInt(dimension);
		for (String id : ids) {
			byte[] bytes = id.getBytes(StandardCharsets.UTF_8);
			payload.putShort((short) bytes.length).put(bytes);
		}
		for (float value : rows) {
			payload.putFloat(value);
		}
		payload.put(new byte[extra]);
		return payload.flip();
	}

	@Test
	void payloadBytesCountsTheHeaderFieldsIdsAndValues() {
		assertThat(LogRecordFormat.payloadBytes(0, 1, 0)).isEqualTo(9);
		assertThat(LogRecordFormat.payloadBytes(2, 3, 5)).isEqualTo(9 + 2 * 3 * 4 + 2 * 2 + 5);
		// No int overflow for records past 2 GiB, so the caller can refuse them.
		assertThat(LogRecordFormat.payloadBytes(100_000, 10_000, 0)).isGreaterThan(Integer.MAX_VALUE);
	}

	@Test
	void encodesIdsInUtf8UpToTheLimitOf16Bits() {
		byte[][] encoded = LogRecordFormat.encodeIds(new String[] { "a", "\u00e9", "unused" }, 2);
		assertThat(encoded).hasNumberOfRows(2);
		assertThat(encoded[0]).containsExactly('a');
		assertThat(encoded[1]).containsExactly(0xC3, 0xA9);
		assertThat(LogRecordFormat.encodeIds(new String[] { "x".repeat(0xFFFF) }, 1)[0]).hasSize(0xFFFF);
		assertThatThrownBy(() -> LogRecordFormat.encodeIds(new String[] { "ok", "x".repeat(0x10000) }, 2))
			.isInstanceOf(IllegalArgumentException.class)
			.hasMessage("id longer than 65535 UTF-8 bytes");
	}

	@Test
	void theChecksumIsCrc32cOfTheRemainingBytesAndLeavesThePositionAlone() {
		ByteBuffer payload = payload((byte) 1, 1, 2, new String[] { "id" }, new float[] { 1, 2 }, 0);
		payload.get(); // the checksum covers what remains, wherever that starts
		CRC32C crc = new CRC32C();
		crc.update(payload.array(), 1, payload.remaining());
		assertThat(LogRecordFormat.checksum(payload)).isEqualTo((int) crc.getValue());
		assertThat(payload.position()).isEqualTo(1);
	}

	@Test
	void decodesAnUpsert() {
		WriteAheadLog.Upsert upsert = LogRecordFormat.decode(
				payload((byte) 1, 2, 2, new String[] { "a", "\u00e9t\u00e9" }, new float[] { 1, 2, 3, -4.5f }, 0));
		assertThat(upsert.ids()).containsExactly("a", "\u00e9t\u00e9");
		assertThat(upsert.dimension()).isEqualTo(2);
		assertThat(upsert.rows()).containsExactly(1, 2, 3, -4.5f);
	}

	@Test
	void refusesPayloadsThatAreNoWellFormedUpsert() {
		assertThatThrownBy(() -> LogRecordFormat.decode(payload((byte) 2, 1, 1, new String[] { "a" }, new float[1], 0)))
			.isInstanceOf(IllegalStateException.class)
			.hasMessage("unknown record type 2");
		assertThatThrownBy(() -> LogRecordFormat.decode(payload((byte) 1, 1, 0, new String[] { "a" }, new float[0], 0)))
			.hasMessage("implausible record: 1 rows of dimension 0");
		assertThatThrownBy(() -> LogRecordFormat.decode(payload((byte) 1, -1, 1, new String[0], new float[0], 0)))
			.hasMessage("implausible record: -1 rows of dimension 1");
		assertThatThrownBy(() -> LogRecordFormat.decode(payload((byte) 1, 2, 4, new String[] { "a" }, new float[1], 0)))
			.hasMessage("implausible record: 2 rows of dimension 4");
		assertThatThrownBy(() -> LogRecordFormat.decode(payload((byte) 1, 1, 1, new String[] { "a" }, new float[1], 3)))
			.hasMessage("3 bytes after the record's values");
	}

}
