package dev.gpucompute.sample.storage;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.concurrent.atomic.AtomicLong;
import java.util.zip.CRC32C;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The append-only write-ahead log of one collection, {@code <name>.wal} next to its snapshot. Every
 * upsert is appended as one record before it is answered and forced to disk with group commit:
 * {@link #append} only writes (the caller holds the collection's write lock, so records are in the
 * order their writes were applied), and {@link #sync} is called after that lock is released. The
 * first thread to reach {@code sync} becomes the leader and forces the file; threads arriving while
 * it forces wait on the same monitor and find, when they get it, that the leader's force (or the
 * next one) already covered their record, so N concurrent writers share far fewer than N forces.
 *
 * <p>Record format, little-endian: int payload length, int CRC-32C of the payload, payload. An
 * upsert's payload is: byte type (1), int row count, int dimension, {@code count} ids as (short
 * UTF-8 length, bytes), then {@code count * dimension} float32 values as written to the device
 * (already normalised for cosine). Positions are logical (they keep growing when the file is
 * truncated by {@link #reset}), so a waiter never confuses two generations of the file.
 *
 * <p>Thread-safe. The store owns the log and closes it; {@link #reset} is called when the collection's
 * snapshot has been written and forced (see {@link CollectionFiles}), with appends excluded by the
 * collection's lock.
 */
public final class WriteAheadLog implements AutoCloseable {

	private static final Logger log = LoggerFactory.getLogger(WriteAheadLog.class);

	/** File name suffix of a log. */
	public static final String SUFFIX = ".wal";

	static final byte UPSERT = 1;

	/** Largest payload a reader accepts; a bigger length field is damage, not a record. */
	static final int MAX_PAYLOAD = Integer.MAX_VALUE - 64;

	private static final int CHUNK = 1 << 20;

	private final Path file;

	private final FileChannel channel;

	private final boolean sync;

	/** Staging for appends, so the JDK's per-thread temporary direct buffers stay small. */
	private final ByteBuffer staging = ByteBuffer.allocateDirect(CHUNK).order(ByteOrder.LITTLE_ENDIAN);

	private final CRC32C crc = new CRC32C();

	/** Where the checksummed bytes start in the staging buffer (appends only, guarded by this). */
	private int crcFrom;

	/** Logical offset of the file's byte 0 (guarded by this). */
	private long base;

	/** Logical end of the last appended record. */
	private volatile long written;

	/** Logical position up to which the file is on disk. */
	private volatile long synced;

	private final Object syncLock = new Object();

	private final AtomicLong forces = new AtomicLong();

	private final AtomicLong records = new AtomicLong();

	/**
	 * Opens (creating if needed) a log for appending at its end.
	 * @param validLength the length of its intact records, from {@link #replay}; anything after it
	 * (a torn tail) is cut off
	 * @param sync whether {@link #sync} forces the file (false only for measuring the cost)
	 */
	public WriteAheadLog(Path file, long validLength, boolean sync) throws IOException {
		this.file = file;
		this.sync = sync;
		this.channel = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.READ,
				StandardOpenOption.WRITE);
		if (this.channel.size() > validLength) {
			this.channel.truncate(validLength);
			this.channel.force(false);
		}
		this.channel.position(validLength);
		this.written = validLength;
		this.synced = validLength;
	}

	public Path file() {
		return this.file;
	}

	/** Bytes in the file now. */
	public synchronized long size() {
		return this.written - this.base;
	}

	/** Forces done so far (for measuring group commit). */
	public long forces() {
		return this.forces.get();
	}

	/** Records appended so far. */
	public long records() {
		return this.records.get();
	}

	/**
	 * Appends one upsert record; it is durable only after {@link #sync} with the returned position.
	 * @param ids the rows' ids, each at most 65535 UTF-8 bytes
	 * @param rows {@code ids.length * dimension} values, row-major
	 * @return the logical end of the record
	 */
	public synchronized long appendUpsert(String[] ids, int count, int dimension, float[] rows) throws IOException {
		byte[][] encoded = new byte[count][];
		long payload = 1 + 4 + 4 + (long) count * dimension * Float.BYTES;
		for (int i = 0; i < count; i++) {
			encoded[i] = ids[i].getBytes(StandardCharsets.UTF_8);
			if (encoded[i].length > 0xFFFF) {
				throw new IllegalArgumentException("id longer than 65535 UTF-8 bytes");
			}
			payload += 2 + encoded[i].length;
		}
		if (payload > MAX_PAYLOAD) {
			throw new IllegalArgumentException("A log record of " + payload + " bytes is too large");
		}
		// The CRC is known only at the end: write a header placeholder, the payload, then the header.
		long start = this.channel.position();
		this.crc.reset();
		ByteBuffer out = this.staging;
		out.clear();
		out.putInt((int) payload).putInt(0);
		// The checksum covers the payload: from byte 8 of the first buffer load, then everything.
		this.crcFrom = out.position();
		out.put(UPSERT).putInt(count).putInt(dimension);
		for (byte[] id : encoded) {
			ensure(out, 2 + id.length);
			out.putShort((short) id.length).put(id);
		}
		int offset = 0;
		int total = count * dimension;
		while (offset < total) {
			ensure(out, Float.BYTES);
			int n = Math.min(out.remaining() / Float.BYTES, total - offset);
			out.asFloatBuffer().put(rows, offset, n);
			out.position(out.position() + n * Float.BYTES);
			offset += n;
		}
		drain(out);
		ByteBuffer header = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN);
		header.putInt((int) payload).putInt((int) this.crc.getValue()).flip();
		while (header.hasRemaining()) {
			this.channel.write(header, start + (8 - header.remaining()));
		}
		long end = this.channel.position();
		this.records.incrementAndGet();
		this.written = this.base + end;
		return this.written;
	}

	/** Writes the staging buffer out if fewer than {@code bytes} are free. */
	private void ensure(ByteBuffer out, int bytes) throws IOException {
		if (out.remaining() < bytes) {
			drain(out);
		}
	}

	/** Writes the staging buffer out, checksumming it from {@link #crcFrom}. */
	private void drain(ByteBuffer out) throws IOException {
		out.flip();
		ByteBuffer checked = out.duplicate();
		checked.position(this.crcFrom);
		this.crc.update(checked);
		this.crcFrom = 0;
		while (out.hasRemaining()) {
			this.channel.write(out);
		}
		out.clear();
	}

	/**
	 * Returns once everything up to {@code position} is on disk, forcing the file if no other thread
	 * did so since (group commit: one force covers every record appended before it started).
	 */
	public void sync(long position) throws IOException {
		if (!this.sync || this.synced >= position) {
			return;
		}
		synchronized (this.syncLock) {
			if (this.synced >= position) {
				return; // a force that started after our append covered it
			}
			long target = this.written;
			this.channel.force(false);
			this.forces.incrementAndGet();
			if (target > this.synced) {
				this.synced = target;
			}
		}
	}

	/**
	 * Empties the log after its records were folded into a forced snapshot (appends excluded by the
	 * caller): every position written so far counts as durable, since the snapshot holds it.
	 */
	public void reset() throws IOException {
		synchronized (this) {
			this.channel.truncate(0);
			this.channel.position(0);
			this.channel.force(false);
			this.base = this.written;
		}
		synchronized (this.syncLock) {
			this.synced = Math.max(this.synced, this.base);
		}
	}

	@Override
	public void close() throws IOException {
		this.channel.close();
	}

	/** One upsert as read back from a log. */
	public record Upsert(String[] ids, int dimension, float[] rows) {
	}

	/** Receives the records of a log in order. */
	@FunctionalInterface
	public interface RecordHandler {

		void upsert(Upsert record);

	}

	/** The outcome of {@link #replay}. */
	public record Replayed(int records, long rows, long validLength, long droppedBytes) {
	}

	/**
	 * Reads a log's intact records in order. A tail that is not a whole record with a matching
	 * checksum (a crash mid-append; its write was never answered) is dropped with a WARN, never an
	 * error; {@code validLength} says where the intact records end.
	 * @param handler receives each record, or {@code null} only to count them (then nothing is logged)
	 */
	public static Replayed replay(Path file, RecordHandler handler) throws IOException {
		if (!Files.exists(file)) {
			return new Replayed(0, 0, 0, 0);
		}
		try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ)) {
			long size = channel.size();
			long position = 0;
			int count = 0;
			long rows = 0;
			ByteBuffer header = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN);
			String problem = null;
			while (position < size) {
				if (size - position < 8) {
					problem = "a partial record header";
					break;
				}
				header.clear();
				readFully(channel, header, position);
				header.flip();
				int length = header.getInt();
				int expected = header.getInt();
				if (length < 9 || length > MAX_PAYLOAD || length > size - position - 8) {
					problem = "a record of " + length + " bytes that the file does not hold";
					break;
				}
				ByteBuffer payload = ByteBuffer.allocate(length).order(ByteOrder.LITTLE_ENDIAN);
				readFully(channel, payload, position + 8);
				payload.flip();
				CRC32C crc = new CRC32C();
				crc.update(payload.duplicate());
				if ((int) crc.getValue() != expected) {
					problem = "a record whose checksum does not match";
					break;
				}
				Upsert upsert;
				try {
					upsert = decode(payload);
				}
				catch (RuntimeException ex) {
					problem = "an unreadable record (" + ex.getMessage() + ")";
					break;
				}
				if (handler != null) {
					handler.upsert(upsert);
				}
				count++;
				rows += upsert.ids().length;
				position += 8 + length;
			}
			if (problem != null && handler != null) {
				log.warn("Dropping the last {} bytes of {}: {} at offset {}, the tail of an append that a crash "
						+ "interrupted (its write was never acknowledged)", size - position, file, problem, position);
			}
			return new Replayed(count, rows, position, size - position);
		}
	}

	private static Upsert decode(ByteBuffer payload) {
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
		return new Upsert(ids, dimension, rows);
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
