package dev.gpucompute.sample.storage;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.zip.CRC32C;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The record writer on its own, against bytes built here from the format's description (little-endian
 * payload length, CRC-32C of the payload, type 1, count, dimension, ids as short length and UTF-8
 * bytes, float32 values): what lands in a log file must stay byte for byte what earlier versions
 * wrote and replay, also for records larger than the staging buffer, whose checksum spans drains.
 */
class LogRecordWriterTests {

	@TempDir
	Path dir;

	/** The record as the format describes it, built without the code under test. */
	private static byte[] expectedRecord(String[] ids, int dimension, float[] rows) {
		byte[][] utf8 = new byte[ids.length][];
		int idBytes = 0;
		for (int i = 0; i < ids.length; i++) {
			utf8[i] = ids[i].getBytes(StandardCharsets.UTF_8);
			idBytes += utf8[i].length;
		}
		int payloadLength = 1 + 4 + 4 + 2 * ids.length + idBytes + rows.length * 4;
		ByteBuffer payload = ByteBuffer.allocate(payloadLength).order(ByteOrder.LITTLE_ENDIAN);
		payload.put((byte) 1).putInt(ids.length).putInt(dimension);
		for (byte[] id : utf8) {
			payload.putShort((short) id.length).put(id);
		}
		for (float value : rows) {
			payload.putFloat(value);
		}
		CRC32C crc = new CRC32C();
		crc.update(payload.array());
		ByteBuffer record = ByteBuffer.allocate(8 + payloadLength).order(ByteOrder.LITTLE_ENDIAN);
		record.putInt(payloadLength).putInt((int) crc.getValue()).put(payload.array());
		return record.array();
	}

	private static float[] rows(int count, int dimension) {
		float[] rows = new float[count * dimension];
		for (int i = 0; i < rows.length; i++) {
			rows[i] = i * 0.5f - 3;
		}
		return rows;
	}

	private static void write(LogRecordWriter writer, FileChannel channel, String[] ids, int dimension, float[] rows)
			throws IOException {
		byte[][] encoded = LogRecordFormat.encodeIds(ids, ids.length);
		long idBytes = 0;
		for (byte[] id : encoded) {
			idBytes += id.length;
		}
		int payload = (int) LogRecordFormat.payloadBytes(ids.length, dimension, idBytes);
		writer.write(encoded, ids.length, dimension, rows, payload, channel.position());
	}

	private FileChannel open(Path file) throws IOException {
		return FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.READ, StandardOpenOption.WRITE);
	}

	@Test
	void writesARecordByteForByteAsTheFormatDescribes() throws IOException {
		Path file = this.dir.resolve("c.wal");
		String[] ids = { "a", "\u00e9t\u00e9", "\uD83D\uDE00" };
		float[] rows = rows(3, 5);
		try (FileChannel channel = open(file)) {
			LogRecordWriter writer = new LogRecordWriter(channel, ByteBuffer::allocateDirect);
			write(writer, channel, ids, 5, rows);
			assertThat(channel.position()).isEqualTo(Files.size(file));
		}
		assertThat(Files.readAllBytes(file)).isEqualTo(expectedRecord(ids, 5, rows));
	}

	@Test
	void aRecordLargerThanTheStagingBufferIsChecksummedAcrossItsDrains() throws IOException {
		Path file = this.dir.resolve("c.wal");
		// 1.2 MB of values: the 1 MiB staging buffer drains twice, the header is written last.
		float[] small = rows(1, 2);
		float[] large = rows(1, 300_000);
		try (FileChannel channel = open(file)) {
			LogRecordWriter writer = new LogRecordWriter(channel, ByteBuffer::allocateDirect);
			write(writer, channel, new String[] { "small" }, 2, small);
			write(writer, channel, new String[] { "large" }, 300_000, large);
			write(writer, channel, new String[] { "after" }, 2, small);
		}
		ByteBuffer expected = ByteBuffer.allocate((int) Files.size(file));
		expected.put(expectedRecord(new String[] { "small" }, 2, small));
		expected.put(expectedRecord(new String[] { "large" }, 300_000, large));
		expected.put(expectedRecord(new String[] { "after" }, 2, small));
		assertThat(expected.hasRemaining()).as("the file holds exactly the three records").isFalse();
		assertThat(Files.readAllBytes(file)).isEqualTo(expected.array());
	}

	@Test
	void stagesOnlyOnceWrittenSizedToItsRecordsUpToAChunkAndDropsItOnRelease() throws IOException {
		List<Integer> allocated = new ArrayList<>();
		try (FileChannel channel = open(this.dir.resolve("c.wal"))) {
			LogRecordWriter writer = new LogRecordWriter(channel, (size) -> {
				allocated.add(size);
				return ByteBuffer.allocateDirect(size);
			});
			assertThat(allocated).as("before the first write").isEmpty();
			write(writer, channel, new String[] { "a" }, 4, rows(1, 4));
			assertThat(allocated).as("the smallest staging buffer").containsExactly(4 << 10);
			write(writer, channel, new String[] { "b" }, 3_000, rows(1, 3_000));
			assertThat(allocated).as("the next power of two above the record").containsExactly(4 << 10, 16 << 10);
			write(writer, channel, new String[] { "c" }, 300_000, rows(1, 300_000));
			assertThat(allocated).as("at most a chunk").containsExactly(4 << 10, 16 << 10, 1 << 20);
			write(writer, channel, new String[] { "d" }, 4, rows(1, 4));
			assertThat(allocated).as("kept for later records").hasSize(3);
			writer.release();
			write(writer, channel, new String[] { "e" }, 4, rows(1, 4));
			assertThat(allocated).as("dropped at release: the next write stages anew")
				.containsExactly(4 << 10, 16 << 10, 1 << 20, 4 << 10);
		}
	}

}
