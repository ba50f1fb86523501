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
import java.util.zip.CRC32;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One file per collection in the data directory, {@code <name>.vec}, replaced atomically: a write
 * goes to a temporary file in the same directory, is forced to disk, and then renamed over the old
 * file with {@link StandardCopyOption#ATOMIC_MOVE}. A reader therefore sees the old file or the new
 * one, never half of one; a crash mid-write leaves only a temporary file, which the next start-up
 * deletes. A CRC-32 trailer catches files damaged after the fact.
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

	public CollectionFiles(Path directory) {
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
	 * Writes a collection, replacing its file atomically.
	 * @param vectors at least {@code ids.size() * dimension} values, slot-major
	 */
	public void write(String name, int metric, int dimension, List<String> ids, float[] vectors) throws IOException {
		Path temp = Files.createTempFile(this.directory, name + ".", TEMP_SUFFIX);
		try {
			try (FileChannel channel = FileChannel.open(temp, StandardOpenOption.WRITE,
					StandardOpenOption.TRUNCATE_EXISTING)) {
				Writer out = new Writer(channel);
				out.buffer.put(MAGIC);
				out.flush(false);
				out.putInt(VERSION);
				out.putInt(metric);
				out.putInt(dimension);
				out.putInt(ids.size());
				for (String id : ids) {
					byte[] bytes = id.getBytes(StandardCharsets.UTF_8);
					out.putInt(bytes.length);
					out.put(bytes);
				}
				out.putFloats(vectors, ids.size() * dimension);
				out.flush(true);
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
	private void forceDirectory() {
		try (FileChannel dir = FileChannel.open(this.directory, StandardOpenOption.READ)) {
			dir.force(true);
		}
		catch (IOException | UnsupportedOperationException ex) {
			// The rename is atomic either way; only its durability across a power loss is weaker.
		}
	}

	/** Deletes a collection's file, if any. */
	public void delete(String name) throws IOException {
		Files.deleteIfExists(fileOf(name));
		forceDirectory();
	}

	/**
	 * Reads every collection file. Leftover temporary files (from a crash mid-write) are deleted; a
	 * damaged file is logged and skipped, so one bad file does not keep the service down.
	 */
	public List<StoredCollection> readAll() {
		List<StoredCollection> collections = new ArrayList<>();
		try (DirectoryStream<Path> files = Files.newDirectoryStream(this.directory)) {
			for (Path file : files) {
				String fileName = file.getFileName().toString();
				if (fileName.endsWith(TEMP_SUFFIX)) {
					log.info("Deleting {}, left over from an interrupted write", file);
					Files.deleteIfExists(file);
				}
				else if (fileName.endsWith(SUFFIX)) {
					String name = fileName.substring(0, fileName.length() - SUFFIX.length());
					try {
						collections.add(read(name, file));
					}
					catch (IOException | RuntimeException ex) {
						log.error("Skipping collection file {}: {}", file, ex.getMessage());
					}
				}
			}
		}
		catch (NoSuchFileException ex) {
			return collections;
		}
		catch (IOException ex) {
			throw new UncheckedIOException("Cannot list the data directory " + this.directory, ex);
		}
		return collections;
	}

	/** Reads one collection file. */
	public StoredCollection read(String name, Path file) throws IOException {
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
			if (dimension < 1 || size < 0 || (long) size * dimension > Integer.MAX_VALUE - 8) {
				throw new IOException("implausible header: dimension " + dimension + ", size " + size);
			}
			List<String> ids = new ArrayList<>(size);
			for (int i = 0; i < size; i++) {
				int length = in.getInt();
				if (length < 0 || length > 1 << 16) {
					throw new IOException("implausible id length " + length);
				}
				ids.add(new String(in.bytes(length), StandardCharsets.UTF_8));
			}
			float[] vectors = new float[size * dimension];
			in.floats(vectors);
			long expected = in.crc.getValue();
			long stored = in.getLong();
			if (stored != expected) {
				throw new IOException("checksum mismatch (file damaged)");
			}
			return new StoredCollection(name, metric, dimension, ids, vectors);
		}
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

		void putFloats(float[] values, int count) throws IOException {
			int offset = 0;
			while (offset < count) {
				ensure(4);
				int n = Math.min(this.buffer.remaining() / 4, count - offset);
				this.buffer.asFloatBuffer().put(values, offset, n);
				this.buffer.position(this.buffer.position() + 4 * n);
				offset += n;
			}
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

		private ByteBuffer take(int bytes) throws IOException {
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

		void floats(float[] out) throws IOException {
			int offset = 0;
			while (offset < out.length) {
				int n = Math.min(out.length - offset, CHUNK / 4);
				take(4 * n).asFloatBuffer().get(out, offset, n);
				offset += n;
			}
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
