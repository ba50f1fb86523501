package dev.gpucompute.sample.storage;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.util.function.IntFunction;
import java.util.zip.CRC32C;

import org.jspecify.annotations.Nullable;

/**
 * Writes upsert records in the {@link LogRecordFormat} onto one log's channel: the record is staged
 * in a direct buffer and drained in pieces, the payload checksummed as it drains, and the header
 * written in place last, since the checksum is known only at the end.
 *
 * <p>Not thread-safe: its {@link WriteAheadLog} calls it under its own monitor, which thereby
 * guards the staging buffer and the checksum state. The log owns the channel (this class never
 * closes it) and undoes a write that failed part-way.
 */
final class LogRecordWriter {

	/** Largest staging buffer; bigger records are drained in pieces of this size. */
	private static final int CHUNK = 1 << 20;

	/** Smallest staging buffer: enough for typical single-vector writes. */
	private static final int MIN_STAGING = 4 << 10;

	private final FileChannel channel;

	/** Makes a staging buffer of the given capacity: {@code ByteBuffer::allocateDirect} for a log. */
	private final IntFunction<ByteBuffer> allocate;

	/**
	 * Staging for appends.
	 * Allocated at the first write, sized to the largest record so far up to {@value #CHUNK}, and
	 * dropped by {@link #release}: a log that is never written holds none.
	 */
	private @Nullable ByteBuffer staging;

	private final CRC32C crc = new CRC32C();

	/** Where the checksummed bytes start in the staging buffer. */
	private int crcFrom;

	/**
	 * A writer onto {@code channel}, the log's file, which it writes at the channel's position, staging
	 * in buffers that {@code allocate} makes (direct ones for a log, so that the JDK's per-thread
	 * temporary direct buffers stay small).
	 */
	LogRecordWriter(FileChannel channel, IntFunction<ByteBuffer> allocate) {
		this.channel = channel;
		this.allocate = allocate;
	}

	/**
	 * Writes one upsert record at the channel's position, which must be {@code start}; the channel's
	 * position ends after the record.
	 * @param encoded the ids in UTF-8 ({@link LogRecordFormat#encodeIds})
	 * @param payload the payload size ({@link LogRecordFormat#payloadBytes}), checked by the caller
	 * @throws IOException when a write fails; part of the record may be in the file then
	 */
	void write(byte[][] encoded, int count, int dimension, float[] rows, int payload, long start) throws IOException {
		if (this.staging == null || this.staging.capacity() < Math.min(CHUNK, 8L + payload)) {
			int size = (int) Math.min(CHUNK, Math.max(MIN_STAGING, Long.highestOneBit(8L + payload - 1) << 1));
			this.staging = this.allocate.apply(size).order(ByteOrder.LITTLE_ENDIAN);
		}
		// The CRC is known only at the end: write a header placeholder, the payload, then the header.
		this.crc.reset();
		ByteBuffer out = this.staging;
		out.clear();
		out.putInt(payload).putInt(0);
		// The checksum covers the payload: from byte 8 of the first buffer load, then everything.
		this.crcFrom = out.position();
		out.put(LogRecordFormat.UPSERT).putInt(count).putInt(dimension);
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
		header.putInt(payload).putInt((int) this.crc.getValue()).flip();
		while (header.hasRemaining()) {
			this.channel.write(header, start + (8 - header.remaining()));
		}
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

	/** Drops the staging buffer; the next write allocates a new one. */
	void release() {
		this.staging = null;
	}

}
