package dev.gpucompute.sample.storage;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Reads a {@link WriteAheadLog}'s file back at start-up ({@link WriteAheadLog#replay}): its intact
 * records in order, where they end, and whether what follows them is a torn tail (dropped) or
 * damage in the middle (an error).
 *
 * <p>Stateless; a replay opens the file read-only on the calling thread and closes it before it
 * returns. It runs before the log is opened for appending, so it takes no lock.
 */
final class LogReplay {

	/** The log's own category, so that operators find the replay's warning where it always was. */
	private static final Logger log = LoggerFactory.getLogger(WriteAheadLog.class);

	/** Bytes read at a time while scanning for an intact record or a zero block. */
	private static final int CHUNK = 1 << 20;

	/** Disk block size assumed for unwritten pages: the smallest sector, so any page size is covered. */
	private static final int BLOCK = 512;

	private LogReplay() {
	}

	/** See {@link WriteAheadLog#replay}. */
	static WriteAheadLog.Replayed replay(Path file, WriteAheadLog.@Nullable RecordHandler handler) throws IOException {
		if (!Files.exists(file)) {
			return new WriteAheadLog.Replayed(0, 0, 0, 0);
		}
		try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ)) {
			long size = channel.size();
			long position = 0;
			int count = 0;
			long rows = 0;
			String problem = null;
			while (position < size) {
				Parsed parsed = parse(channel, position, size);
				WriteAheadLog.Upsert upsert = parsed.upsert();
				if (upsert == null) {
					problem = parsed.problem();
					break;
				}
				if (handler != null) {
					handler.upsert(upsert);
				}
				count++;
				rows += upsert.ids().length;
				position += LogRecordFormat.HEADER + parsed.length();
			}
			if (problem != null) {
				long intact = findIntactRecord(channel, position, size);
				if (intact >= 0 && !holdsZeroBlock(channel, position, intact)) {
					throw new IOException("the write-ahead log " + file + " is damaged in the middle: " + problem
							+ " at offset " + position + ", followed by an intact record at offset " + intact + " (of "
							+ size + " bytes); dropping the rest could lose acknowledged writes");
				}
				if (handler != null) {
					log.warn("Dropping the last {} bytes of {}: {} at offset {}, the tail of an append that a crash "
							+ "interrupted (its write was never acknowledged)", size - position, file, problem, position);
				}
			}
			return new WriteAheadLog.Replayed(count, rows, position, size - position);
		}
	}

	/**
	 * A record read at an offset: the record and its payload length, or what is wrong there; exactly
	 * one of {@code upsert} and {@code problem} is null.
	 */
	private record Parsed(WriteAheadLog.@Nullable Upsert upsert, int length, @Nullable String problem) {
	}

	/** The record at {@code position}, or what is wrong there, in a file of {@code size} bytes. */
	private static Parsed parse(FileChannel channel, long position, long size) throws IOException {
		if (size - position < LogRecordFormat.HEADER) {
			return new Parsed(null, 0, "a partial record header");
		}
		ByteBuffer header = ByteBuffer.allocate(LogRecordFormat.HEADER).order(ByteOrder.LITTLE_ENDIAN);
		readFully(channel, header, position);
		header.flip();
		int length = header.getInt();
		int expected = header.getInt();
		if (length < LogRecordFormat.MIN_PAYLOAD || length > LogRecordFormat.MAX_PAYLOAD
				|| length > size - position - LogRecordFormat.HEADER) {
			return new Parsed(null, 0, "a record of " + length + " bytes that the file does not hold");
		}
		ByteBuffer payload = ByteBuffer.allocate(length).order(ByteOrder.LITTLE_ENDIAN);
		readFully(channel, payload, position + LogRecordFormat.HEADER);
		payload.flip();
		if (LogRecordFormat.checksum(payload) != expected) {
			return new Parsed(null, 0, "a record whose checksum does not match");
		}
		try {
			return new Parsed(LogRecordFormat.decode(payload), length, null);
		}
		catch (RuntimeException ex) {
			return new Parsed(null, 0, "an unreadable record (" + ex.getMessage() + ")");
		}
	}

	/**
	 * The offset of the first intact record after {@code damaged}, or -1. Scans every offset, reading
	 * the file in windows; only offsets whose header and payload start are plausible are checksummed.
	 */
	private static long findIntactRecord(FileChannel channel, long damaged, long size) throws IOException {
		int prefix = LogRecordFormat.PREFIX;
		ByteBuffer window = ByteBuffer.allocate(CHUNK + prefix).order(ByteOrder.LITTLE_ENDIAN);
		for (long start = damaged + 1; start + prefix <= size; start += CHUNK) {
			window.clear();
			window.limit((int) Math.min(window.capacity(), size - start));
			readFully(channel, window, start);
			for (int i = 0; i < CHUNK && i + prefix <= window.limit(); i++) {
				long at = start + i;
				int length = window.getInt(i);
				if (length < LogRecordFormat.MIN_PAYLOAD || length > size - at - LogRecordFormat.HEADER
						|| window.get(i + 8) != LogRecordFormat.UPSERT) {
					continue;
				}
				int count = window.getInt(i + 9);
				int dimension = window.getInt(i + 13);
				if (count < 0 || dimension < 1 || LogRecordFormat.payloadBytes(count, dimension, 0) > length
						|| LogRecordFormat.payloadBytes(count, dimension, (long) count * LogRecordFormat.MAX_ID_BYTES)
								< length) {
					continue;
				}
				if (parse(channel, at, size).problem() == null) {
					return at;
				}
			}
		}
		return -1;
	}

	/** Whether {@code [from, to)} holds an aligned all-zero block of {@value #BLOCK} bytes. */
	private static boolean holdsZeroBlock(FileChannel channel, long from, long to) throws IOException {
		long first = (from + BLOCK - 1) / BLOCK * BLOCK;
		ByteBuffer window = ByteBuffer.allocate(CHUNK);
		for (long start = first; start + BLOCK <= to; start += CHUNK) {
			window.clear();
			window.limit((int) Math.min(CHUNK, (to - start) / BLOCK * BLOCK));
			readFully(channel, window, start);
			for (int block = 0; block + BLOCK <= window.limit(); block += BLOCK) {
				boolean zero = true;
				for (int i = block; i < block + BLOCK && zero; i += Long.BYTES) {
					zero = window.getLong(i) == 0;
				}
				if (zero) {
					return true;
				}
			}
		}
		return false;
	}

	private static void readFully(FileChannel channel, ByteBuffer buffer, long position) throws IOException {
		while (buffer.hasRemaining()) {
			int n = channel.read(buffer, position);
			if (n < 0) {
				throw new java.io.EOFException();
			}
			position += n;
		}
	}

}
