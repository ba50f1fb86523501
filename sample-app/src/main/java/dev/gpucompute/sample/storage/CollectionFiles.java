package dev.gpucompute.sample.storage;

import java.io.EOFException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.zip.CRC32;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One file per collection in the data directory, {@code <name>.vec}, replaced atomically: a write
 * goes to a temporary file in the same directory, is forced to disk, and then renamed over the old
 * file with {@link StandardCopyOption#ATOMIC_MOVE}. A reader therefore sees the old file or the new
 * one, never half of one; a crash mid-write leaves only a temporary file, which the next start-up
 * deletes. A CRC-32 trailer catches files damaged after the fact. Files are written and read in
 * chunks of a megabyte ({@link RowSource}, {@link Loader}), so neither needs the whole collection
 * on the heap. The file is the collection's snapshot; writes since then are in its
 * {@link WriteAheadLog} ({@code <name>.wal}), which the store folds into a new snapshot.
 *
 * <p>Format, little-endian: magic {@code GCVEC001}, int format version (1), int metric ordinal, int
 * dimension, int size, then {@code size} ids as (int byte length, UTF-8 bytes), then
 * {@code size * dimension} float32 values, slot-major, then the long CRC-32 of everything after the
 * magic.
 *
 * <p>Thread-safe as long as no two threads write the same collection at once (the store writes a
 * collection under its lock).
 */
public final class CollectionFiles {

	private static final Logger log = LoggerFactory.getLogger(CollectionFiles.class);

	/** File name suffix of a collection. */
	public static final String SUFFIX = ".vec";

	private static final String TEMP_SUFFIX = ".tmp";

	private static final byte[] MAGIC = "GCVEC001".getBytes(StandardCharsets.US_ASCII);

	private static final int VERSION = 1;

	private static final int CHUNK = 1 << 20;

	private final Path directory;

	private final ChannelOpener opener;

	/** The files of {@code directory} (created if missing). */
	public CollectionFiles(Path directory) {
		this(directory, ChannelOpener.DEFAULT);
	}

	/**
	 * The files of {@code directory} (created if missing), opened through {@code opener}: snapshots
	 * and the logs of {@link #openLog}.
	 */
	public CollectionFiles(Path directory, ChannelOpener opener) {
		this.opener = opener;
		this.directory = directory.toAbsolutePath().normalize();
		try {
			Files.createDirectories(this.directory);
		}
		catch (IOException ex) {
			throw new UncheckedIOException("Cannot create the data directory " + this.directory, ex);
		}
	}

	public Path directory() {
		return this.directory;
	}

	/** The file of a collection. */
	public Path fileOf(String name) {
		return this.directory.resolve(name + SUFFIX);
	}

	/**
	 * Supplies a collection's rows for a snapshot, a bounded chunk at a time (the store downloads
	 * them from device storage, so no full host copy of the collection is needed).
	 */
	@FunctionalInterface
	public interface RowSource {

		/** Fills {@code dst} (little-endian, from its position) with {@code rowCount} rows from {@code firstRow} on. */
		void read(long firstRow, int rowCount, ByteBuffer dst) throws IOException;

	}

	/**
	 * Writes a collection from an array, replacing its file atomically.
	 * @param vectors at least {@code ids.size() * dimension} values, slot-major
	 */
	public void write(String name, int metric, int dimension, List<String> ids, float[] vectors) throws IOException {
		write(name, metric, dimension, ids.toArray(String[]::new), ids.size(), (first, count, dst) -> {
			int from = Math.toIntExact(first * dimension);
			int values = count * dimension;
			if (from + values > vectors.length) {
				throw new IndexOutOfBoundsException("rows " + first + ".." + (first + count) + " beyond the array");
			}
			dst.asFloatBuffer().put(vectors, from, values);
			dst.position(dst.position() + values * Float.BYTES);
		});
	}

	/**
	 * Writes a collection, replacing its file atomically; the rows come from {@code rows} in chunks
	 * of at most {@value #CHUNK} bytes.
	 * @param ids at least {@code size} ids, in slot order
	 */
	public void write(String name, int metric, int dimension, String[] ids, int size, RowSource rows)
			throws IOException {
		Path temp = Files.createTempFile(this.directory, name + ".", TEMP_SUFFIX);
		try {
			try (FileChannel channel = this.opener.open(temp,
					Set.of(StandardOpenOption.WRITE, StandardOpenOption.TRUNCATE_EXISTING))) {
				Writer out = new Writer(channel);
				out.buffer.put(MAGIC);
				out.flush(false);
				out.putInt(VERSION);
				out.putInt(metric);
				out.putInt(dimension);
				out.putInt(size);
				for (int i = 0; i < size; i++) {
					byte[] bytes = ids[i].getBytes(StandardCharsets.UTF_8);
					out.putInt(bytes.length);
					out.put(bytes);
				}
				out.flush(true);
				int rowBytes = dimension * Float.BYTES;
				int perChunk = Math.max(1, CHUNK / rowBytes);
				for (long first = 0; first < size; first += perChunk) {
					int count = (int) Math.min(perChunk, size - first);
					if (out.buffer.capacity() < count * rowBytes) {
						// One row larger than a chunk (dimension above 262144 is refused earlier; be safe).
						throw new IOException("a row of " + rowBytes + " bytes exceeds the snapshot chunk");
					}
					ByteBuffer chunk = out.buffer;
					chunk.clear();
					chunk.limit(count * rowBytes);
					rows.read(first, count, chunk);
					if (chunk.position() != count * rowBytes) {
						throw new IOException("the row source gave " + chunk.position() + " bytes for " + count + " rows");
					}
					out.flush(true);
				}
				out.buffer.putLong(out.crc.getValue());
				out.flush(false);
				channel.force(true);
			}
			move(temp, fileOf(name));
			forceDirectory();
		}
		finally {
			Files.deleteIfExists(temp);
		}
	}

	private static void move(Path from, Path to) throws IOException {
		try {
			Files.move(from, to, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
		}
		catch (AtomicMoveNotSupportedException ex) {
			throw new IOException("The data directory's file system cannot rename atomically, so collections could "
					+ "be left half-written; put sample.data-dir on a local file system", ex);
		}
	}

	/** Makes the rename itself durable; best effort, since not every platform can open a directory. */
	/** The rename is atomic either way; forcing the directory makes it durable across a power loss. */
	private void forceDirectory() {
		WriteAheadLog.forceDirectory(this.directory);
	}

	/**
	 * Deletes a collection's file and then its log, if any: a crash in between leaves a log without
	 * a file, which start-up deletes ({@link #orphanLogs}), never a file with stale contents.
	 */
	public void delete(String name) throws IOException {
		Files.deleteIfExists(fileOf(name));
		forceDirectory();
		Files.deleteIfExists(logOf(name));
		forceDirectory();
	}

	/**
	 * The names of the collections in the data directory, sorted. Leftover temporary files (from a
	 * crash mid-write) are deleted.
	 */
	public List<String> names() {
		List<String> names = new ArrayList<>();
		try (DirectoryStream<Path> files = Files.newDirectoryStream(this.directory)) {
			for (Path file : files) {
				String fileName = file.getFileName().toString();
				if (fileName.endsWith(TEMP_SUFFIX)) {
					log.info("Deleting {}, left over from an interrupted write", file);
					Files.deleteIfExists(file);
				}
				else if (fileName.endsWith(SUFFIX)) {
					names.add(fileName.substring(0, fileName.length() - SUFFIX.length()));
				}
			}
		}
		catch (NoSuchFileException ex) {
			return names;
		}
		catch (IOException ex) {
			throw new UncheckedIOException("Cannot list the data directory " + this.directory, ex);
		}
		names.sort(null);
		return names;
	}

	/**
	 * Names of write-ahead logs ({@code <name>.wal}) with no collection file: left by a crash while a
	 * collection was deleted (its file goes first).
	 */
	public List<Path> orphanLogs() {
		List<Path> orphans = new ArrayList<>();
		try (DirectoryStream<Path> files = Files.newDirectoryStream(this.directory, "*" + WriteAheadLog.SUFFIX)) {
			for (Path file : files) {
				String fileName = file.getFileName().toString();
				String name = fileName.substring(0, fileName.length() - WriteAheadLog.SUFFIX.length());
				if (!Files.exists(fileOf(name))) {
					orphans.add(file);
				}
			}
		}
		catch (IOException ex) {
			throw new UncheckedIOException("Cannot list the data directory " + this.directory, ex);
		}
		return orphans;
	}

	/** The write-ahead log of a collection. */
	public Path logOf(String name) {
		return this.directory.resolve(name + WriteAheadLog.SUFFIX);
	}

	/**
	 * Opens (creating if needed) the write-ahead log of a collection for appending, through this
	 * directory's {@link ChannelOpener}; see {@link WriteAheadLog#WriteAheadLog(Path, long, boolean)}.
	 * The caller owns the log and closes it.
	 */
	public WriteAheadLog openLog(String name, long validLength, boolean sync) throws IOException {
		return new WriteAheadLog(logOf(name), validLength, sync, this.opener);
	}

	/**
	 * The fewest bytes a snapshot of {@code size} vectors of {@code dimension} takes (ids of one
	 * byte): a fold is not worth trying when the file system has less room than this.
	 */
	public static long snapshotBytesAtLeast(long size, int dimension) {
		return MAGIC.length + 4L * 4 + size * (4L + 1) + size * dimension * Float.BYTES + 8;
	}

	/** Usable bytes of the data directory's file system, or -1 when they cannot be read. */
	public long usableSpace() {
		return StorageFailure.usableSpace(this.directory);
	}

	/** Receives a collection file as it is streamed in (see {@link #load}). */
	public interface Loader {

		/** The header; may refuse (throw) before anything else is read. */
		void begin(int metric, int dimension, int size);

		/** The ids, in slot order. */
		void ids(String[] ids);

		/** A chunk of rows, little-endian float32, {@code chunk.remaining()} bytes from {@code firstRow} on. */
		void rows(long firstRow, int rowCount, ByteBuffer chunk);

	}

	/**
	 * Streams one collection file into {@code loader} in chunks of at most {@value #CHUNK} bytes, so
	 * loading needs no full copy of the vectors on the heap. The checksum is verified at the end:
	 * when it fails the loader has seen damaged data and its caller must discard it.
	 */
	public void load(Path file, Loader loader) throws IOException {
		try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ)) {
			Reader in = new Reader(channel);
			byte[] magic = in.bytes(MAGIC.length);
			if (!java.util.Arrays.equals(magic, MAGIC)) {
				throw new IOException("not a collection file (bad magic)");
			}
			in.crc.reset();
			int version = in.getInt();
			if (version != VERSION) {
				throw new IOException("unsupported format version " + version);
			}
			int metric = in.getInt();
			int dimension = in.getInt();
			int size = in.getInt();
			if (dimension < 1 || dimension > CHUNK / Float.BYTES || size < 0) {
				throw new IOException("implausible header: dimension " + dimension + ", size " + size);
			}
			long payload = (long) size * dimension * Float.BYTES;
			if (payload + 16L + 4L * size > channel.size()) {
				throw new IOException("the header promises " + size + " vectors of dimension " + dimension
						+ ", more than the file's " + channel.size() + " bytes hold (truncated)");
			}
			loader.begin(metric, dimension, size);
			String[] ids = new String[size];
			for (int i = 0; i < size; i++) {
				int length = in.getInt();
				if (length < 0 || length > 1 << 16) {
					throw new IOException("implausible id length " + length);
				}
				ids[i] = new String(in.bytes(length), StandardCharsets.UTF_8);
			}
			loader.ids(ids);
			int rowBytes = dimension * Float.BYTES;
			int perChunk = Math.max(1, CHUNK / rowBytes);
			for (long first = 0; first < size; first += perChunk) {
				int count = (int) Math.min(perChunk, size - first);
				loader.rows(first, count, in.take(count * rowBytes));
			}
			long expected = in.crc.getValue();
			long stored = in.getLong();
			if (stored != expected) {
				throw new IOException("checksum mismatch (file damaged)");
			}
		}
	}

	/** Reads one collection file whole (tests and tools; the store streams with {@link #load}). */
	public StoredCollection read(String name, Path file) throws IOException {
		int[] header = new int[3];
		List<String> ids = new ArrayList<>();
		float[][] vectors = new float[1][];
		load(file, new Loader() {

			@Override
			public void begin(int metric, int dimension, int size) {
				header[0] = metric;
				header[1] = dimension;
				header[2] = size;
				vectors[0] = new float[Math.multiplyExact(size, dimension)];
			}

			@Override
			public void ids(String[] read) {
				java.util.Collections.addAll(ids, read);
			}

			@Override
			public void rows(long firstRow, int rowCount, ByteBuffer chunk) {
				chunk.asFloatBuffer().get(vectors[0], (int) firstRow * header[1], rowCount * header[1]);
			}

		});
		return new StoredCollection(name, header[0], header[1], ids, vectors[0]);
	}

	/**
	 * A collection as read from its file.
	 *
	 * @param name the collection's name (from the file name)
	 * @param metric the metric's ordinal
	 * @param dimension values per vector
	 * @param ids ids in slot order
	 * @param vectors {@code ids.size() * dimension} values, slot-major
	 */
	public record StoredCollection(String name, int metric, int dimension, List<String> ids, float[] vectors) {
	}

	/** Buffered little-endian output with a running CRC of everything flushed with {@code checksum}. */
	private static final class Writer {

		final FileChannel channel;

		final ByteBuffer buffer = ByteBuffer.allocate(CHUNK).order(ByteOrder.LITTLE_ENDIAN);

		final CRC32 crc = new CRC32();

		Writer(FileChannel channel) {
			this.channel = channel;
		}

		void ensure(int bytes) throws IOException {
			if (this.buffer.remaining() < bytes) {
				flush(true);
			}
		}

		void putInt(int value) throws IOException {
			ensure(4);
			this.buffer.putInt(value);
		}

		void put(byte[] bytes) throws IOException {
			int offset = 0;
			while (offset < bytes.length) {
				ensure(1);
				int n = Math.min(this.buffer.remaining(), bytes.length - offset);
				this.buffer.put(bytes, offset, n);
				offset += n;
			}
		}

		void flush(boolean checksum) throws IOException {
			this.buffer.flip();
			if (checksum) {
				this.crc.update(this.buffer.duplicate());
			}
			while (this.buffer.hasRemaining()) {
				this.channel.write(this.buffer);
			}
			this.buffer.clear();
		}

	}

	/** Buffered little-endian input with a running CRC of everything consumed. */
	private static final class Reader {

		final FileChannel channel;

		final ByteBuffer buffer = ByteBuffer.allocate(CHUNK).order(ByteOrder.LITTLE_ENDIAN);

		final CRC32 crc = new CRC32();

		Reader(FileChannel channel) {
			this.channel = channel;
			this.buffer.limit(0);
		}

		void need(int bytes) throws IOException {
			if (this.buffer.remaining() >= bytes) {
				return;
			}
			this.buffer.compact();
			while (this.buffer.position() < bytes) {
				if (this.channel.read(this.buffer) < 0) {
					throw new EOFException("file ends early (truncated)");
				}
			}
			this.buffer.flip();
		}

		ByteBuffer take(int bytes) throws IOException {
			need(bytes);
			ByteBuffer slice = this.buffer.slice().order(ByteOrder.LITTLE_ENDIAN);
			slice.limit(bytes);
			this.crc.update(slice.duplicate());
			this.buffer.position(this.buffer.position() + bytes);
			return slice;
		}

		int getInt() throws IOException {
			return take(4).getInt();
		}

		long getLong() throws IOException {
			return take(8).getLong();
		}

		byte[] bytes(int length) throws IOException {
			byte[] out = new byte[length];
			int offset = 0;
			while (offset < length) {
				int n = Math.min(length - offset, CHUNK);
				take(n).get(out, offset, n);
				offset += n;
			}
			return out;
		}

	}

}
