package dev.gpucompute.sample.storage;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;

import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The append-only write-ahead log of one collection, {@code <name>.wal} next to its snapshot. Every
 * upsert is appended as one record and forced to disk before it is applied and answered:
 * {@link #appendUpsert} only writes (the store appends a group of writes in the order it will apply
 * them), and {@link #sync} forces. {@code sync} is also group commit on its own: the first thread to
 * reach it becomes the leader and forces the file; threads arriving while it forces wait on the same
 * monitor and find, when they get it, that the leader's force (or the next one) already covered
 * their record. (The store commits writes in groups and calls it once per group.)
 *
 * <p>Records that must not count (their force failed, or their write could not be applied) are cut
 * off with {@link #discardFrom}, so a replay never brings back a write that was answered as failed.
 *
 * <p>Record format, little-endian: int payload length, int CRC-32C of the payload, payload. An
 * upsert's payload is: byte type (1), int row count, int dimension, {@code count} ids as (short
 * UTF-8 length, bytes), then {@code count * dimension} float32 values as written to the device
 * (already normalised for cosine). Positions are logical (they keep growing when the file is
 * truncated by {@link #reset} or {@link #discardFrom}), so a waiter never confuses two generations of
 * the file.
 *
 * <p>This class owns the open file: its logical positions, the forces (group commit, and whether
 * to force at all), the failure that breaks it, and the cuts. The layout of a record is
 * {@link LogRecordFormat}'s, writing one {@link LogRecordWriter}'s, and reading a file back at
 * start-up {@link LogReplay}'s.
 *
 * <p>Thread-safe. This log's monitor guards appends (with the record writer and its staging
 * buffer), the file's logical base, resets and cuts; {@code syncLock} serialises forces. The store
 * owns the log and closes it; {@link #reset} is called when the collection's snapshot has been
 * written and forced (see {@link CollectionFiles}), with appends excluded by the collection's commit
 * lock.
 */
public final class WriteAheadLog implements AutoCloseable {

	private static final Logger log = LoggerFactory.getLogger(WriteAheadLog.class);

	/** File name suffix of a log. */
	public static final String SUFFIX = ".wal";

	/** Largest payload a record may have; a bigger length field is damage, not a record. */
	public static final int MAX_PAYLOAD = LogRecordFormat.MAX_PAYLOAD;

	/** Longest id a record can hold, in UTF-8 bytes (its length is stored in 16 bits). */
	public static final int MAX_ID_BYTES = LogRecordFormat.MAX_ID_BYTES;

	private final Path file;

	private final FileChannel channel;

	private final boolean sync;

	/** Encodes appended records onto the channel (guarded by this, as its staging buffer is). */
	private final LogRecordWriter writer;

	/** Logical offset of the file's byte 0 (guarded by this). */
	private long base;

	/** Logical end of the last appended record. */
	private volatile long written;

	/** Logical position up to which the file is on disk. */
	private volatile long synced;

	/**
	 * Why the log cannot be trusted (null while it can): a failed force (Linux may have dropped the
	 * dirty pages, so a later force could succeed without them), or an append or reset that failed
	 * and could not be undone. Every append and sync fails until {@link #reset} succeeds, that is
	 * until a snapshot holds everything. Set under this or syncLock, cleared under both.
	 */
	private volatile @Nullable IOException failure;

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
		this(file, validLength, sync, ChannelOpener.DEFAULT);
	}

	/**
	 * {@link #WriteAheadLog(Path, long, boolean)} with the file opened through {@code opener} (see
	 * {@link CollectionFiles#openLog}).
	 */
	public WriteAheadLog(Path file, long validLength, boolean sync, ChannelOpener opener) throws IOException {
		this.file = file;
		this.sync = sync;
		boolean created = !Files.exists(file);
		FileChannel opened = opener.open(file, OPEN_OPTIONS);
		try {
			if (opened.size() > validLength) {
				opened.truncate(validLength);
				opened.force(false);
			}
			opened.position(validLength);
			if (created) {
				// The new file's directory entry must be durable too, or a crash could lose the whole log.
				forceDirectory(file.toAbsolutePath().getParent());
			}
		}
		catch (IOException | RuntimeException ex) {
			try {
				opened.close();
			}
			catch (IOException closing) {
				ex.addSuppressed(closing);
			}
			throw ex;
		}
		this.channel = opened;
		this.writer = new LogRecordWriter(opened, ByteBuffer::allocateDirect);
		this.written = validLength;
		this.synced = validLength;
	}

	private static final Set<StandardOpenOption> OPEN_OPTIONS = Set.of(StandardOpenOption.CREATE,
			StandardOpenOption.READ, StandardOpenOption.WRITE);

	/** Makes a directory's entries durable; best effort, since not every platform can open a directory. */
	static void forceDirectory(@Nullable Path directory) {
		if (directory == null) {
			return;
		}
		try (FileChannel dir = FileChannel.open(directory, StandardOpenOption.READ)) {
			dir.force(true);
		}
		catch (IOException | UnsupportedOperationException ex) {
			// Only the entry's durability across a power loss is weaker.
		}
	}

	public Path file() {
		return this.file;
	}

	/** Bytes in the file now. */
	public synchronized long size() {
		return this.written - this.base;
	}

	/**
	 * Whether a fold is due whatever the size: the log failed and only a snapshot followed by a
	 * successful {@link #reset} makes it usable again.
	 */
	public boolean broken() {
		return this.failure != null;
	}

	/** Why the log is {@link #broken}, or {@code null} while it is not. */
	public @Nullable IOException failure() {
		return this.failure;
	}

	/** The logical end of the last appended record: where the next one starts. */
	public synchronized long end() {
		return this.written;
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
	 * The payload size of an upsert record; the caller checks it against {@link #MAX_PAYLOAD} before
	 * changing anything.
	 * @param idBytes the ids' UTF-8 bytes together
	 */
	public static long payloadBytes(int count, int dimension, long idBytes) {
		return LogRecordFormat.payloadBytes(count, dimension, idBytes);
	}

	/**
	 * Appends one upsert record; it is durable only after {@link #sync} with the returned position.
	 * A failed append leaves no trace in the file (it is cut back to where the record began), or,
	 * when even that fails, leaves the log {@link #broken}.
	 * @param ids the rows' ids, each at most {@value #MAX_ID_BYTES} UTF-8 bytes
	 * @param rows {@code ids.length * dimension} values, row-major
	 * @return the logical end of the record
	 * @throws IllegalArgumentException when an id or the record is too large (nothing is written)
	 * @throws IOException when the log is broken or the write failed
	 */
	public synchronized long appendUpsert(String[] ids, int count, int dimension, float[] rows) throws IOException {
		byte[][] encoded = LogRecordFormat.encodeIds(ids, count);
		long idBytes = 0;
		for (byte[] id : encoded) {
			idBytes += id.length;
		}
		long payload = payloadBytes(count, dimension, idBytes);
		if (payload > MAX_PAYLOAD) {
			throw new IllegalArgumentException("A log record of " + payload + " bytes is too large");
		}
		ensureUsable();
		long start = this.channel.position();
		try {
			this.writer.write(encoded, count, dimension, rows, (int) payload, start);
		}
		catch (IOException | RuntimeException ex) {
			undo(start, ex);
			throw ex;
		}
		long end = this.channel.position();
		this.records.incrementAndGet();
		this.written = this.base + end;
		return this.written;
	}

	private void ensureUsable() throws IOException {
		IOException cause = this.failure;
		if (cause != null) {
			throw new IOException("The write-ahead log " + this.file + " is unusable since an earlier failure ("
					+ cause.getMessage() + "); it is usable again once the collection's snapshot is written", cause);
		}
	}

	/**
	 * Cuts a failed append's partial record off, so that later records follow the last whole one
	 * (a partial record in the middle would end every replay there). If that fails too, the log is
	 * broken until the next snapshot.
	 */
	private void undo(long start, Exception cause) {
		try {
			this.channel.truncate(start);
			this.channel.position(start);
		}
		catch (IOException | RuntimeException ex) {
			cause.addSuppressed(ex);
			IOException failure = new IOException("a failed append could not be cut off (" + ex + ")", cause);
			this.failure = failure;
			log.error("The write-ahead log {} holds a partial record that could not be removed; it refuses writes "
					+ "until the collection's snapshot is written", this.file, ex);
		}
	}

	/**
	 * Returns once everything up to {@code position} is on disk, forcing the file if no other thread
	 * did so since (group commit: one force covers every record appended before it started).
	 * @throws IOException when the force fails or failed before (the log is then {@link #broken}
	 * until the next snapshot: a later force could succeed without the pages the failed one lost)
	 */
	public void sync(long position) throws IOException {
		if (!this.sync || this.synced >= position) {
			return;
		}
		synchronized (this.syncLock) {
			if (this.synced >= position) {
				return; // a force that started after our append covered it, or a snapshot holds it
			}
			ensureUsable();
			long target = this.written;
			try {
				this.channel.force(false);
			}
			catch (IOException ex) {
				this.failure = ex;
				throw ex;
			}
			this.forces.incrementAndGet();
			if (target > this.synced) {
				this.synced = target;
			}
		}
	}

	/**
	 * Empties the log after its records were folded into a forced snapshot (appends excluded by the
	 * caller): every position written so far counts as durable, since the snapshot holds it. A log
	 * that was {@link #broken} is usable again once this succeeds.
	 */
	public void reset() throws IOException {
		synchronized (this) {
			this.channel.truncate(0);
			// From here on the file is empty: later appends start at 0 with logical positions past every
			// earlier one, even if the force below fails.
			this.base = this.written;
			try {
				this.channel.position(0);
				this.channel.force(false);
			}
			catch (IOException ex) {
				this.failure = ex;
				throw ex;
			}
			synchronized (this.syncLock) {
				this.synced = Math.max(this.synced, this.base);
				this.failure = null;
			}
		}
	}

	/**
	 * Cuts off every record after {@code position} (the logical end of the last record to keep), and
	 * forces the cut: for records that were appended but must never count, because their force
	 * failed or their write could not be applied, so that neither a replay nor a crash brings them
	 * back. Later appends get positions past every earlier one. Appends are excluded by the caller;
	 * a {@link #broken} log stays broken (only {@link #reset} makes it usable again).
	 * @throws IOException when the cut or its force failed: the log is then broken, and until the
	 * next snapshot the file may still hold the records
	 */
	public void discardFrom(long position) throws IOException {
		synchronized (this) {
			if (position < this.base || position > this.written) {
				throw new IllegalArgumentException("Position " + position + " is not within the log's records ("
						+ this.base + ".." + this.written + ")");
			}
			long physical = position - this.base;
			try {
				this.channel.truncate(physical);
				this.channel.position(physical);
				// From here on the file ends at the cut: its end keeps the logical position written so far.
				this.base = this.written - physical;
				if (this.sync) {
					this.channel.force(false);
				}
			}
			catch (IOException ex) {
				fail(ex);
				throw ex;
			}
			synchronized (this.syncLock) {
				// Everything left in the file was forced before the records that were cut off.
				this.synced = Math.max(this.synced, this.written);
			}
		}
	}

	/** Marks the log broken, keeping the first failure as the reason. */
	private void fail(IOException ex) {
		synchronized (this.syncLock) {
			if (this.failure == null) {
				this.failure = ex;
			}
		}
	}

	/** Closes the file; a {@link #sync} still waiting then fails with {@link java.nio.channels.ClosedChannelException}. */
	@Override
	public void close() throws IOException {
		synchronized (this) {
			this.writer.release();
		}
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
	 *
	 * <p>Only the tail may be damaged that way. A damaged record followed by an intact one is damage
	 * in the middle of the log, which would drop acknowledged writes, so it is an error, unless the
	 * damaged part holds an all-zero disk block: what an OS crash or power loss leaves where pages of
	 * records that were never forced (so never answered) had not reached the disk yet.
	 * @param handler receives each record, or {@code null} only to count them (then nothing is logged)
	 * @throws IOException when the file cannot be read, or is damaged in the middle (naming the offsets)
	 */
	public static Replayed replay(Path file, @Nullable RecordHandler handler) throws IOException {
		return LogReplay.replay(file, handler);
	}

}
