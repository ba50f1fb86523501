package dev.gpucompute.sample.storage;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.ReadableByteChannel;
import java.nio.channels.WritableByteChannel;
import java.nio.file.OpenOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Set;

/**
 * A file channel that fails on demand, for fault injection into {@link WriteAheadLog} and
 * {@link CollectionFiles}: a relative write can stop part-way (like ENOSPC after some bytes), and
 * truncate or force can throw (like EIO). The switches are this channel's own fields or, for a
 * channel opened through a {@link FaultyDisk}, the disk's, which all its files share. Everything
 * else goes to a real channel. Test-only.
 */
public final class FaultyChannel extends FileChannel {

	private final FileChannel delegate;

	private final Path file;

	private final FaultyDisk disk;

	/** Bytes relative writes may still write before one fails; negative: no limit. */
	volatile long writableBytes = -1;

	volatile boolean failTruncate;

	volatile boolean failForce;

	FaultyChannel(Path file) throws IOException {
		this(file, Set.of(StandardOpenOption.CREATE, StandardOpenOption.READ, StandardOpenOption.WRITE));
	}

	FaultyChannel(Path file, Set<? extends OpenOption> options) throws IOException {
		this(file, options, null);
	}

	FaultyChannel(Path file, Set<? extends OpenOption> options, FaultyDisk disk) throws IOException {
		this.delegate = FileChannel.open(file, options);
		this.file = file;
		this.disk = disk;
	}

	private boolean onDisk() {
		return this.disk != null && this.disk.affects(this.file);
	}

	@Override
	public int write(ByteBuffer src) throws IOException {
		if (onDisk()) {
			int allowed = this.disk.take(src.remaining());
			ByteBuffer part = src.duplicate();
			part.limit(src.position() + allowed);
			int n = this.delegate.write(part);
			src.position(src.position() + n);
			this.disk.giveBack(allowed - n);
			return n;
		}
		long allowed = this.writableBytes;
		if (allowed < 0) {
			return this.delegate.write(src);
		}
		if (allowed == 0) {
			throw new IOException("No space left on device (injected)");
		}
		ByteBuffer part = src.duplicate();
		part.limit((int) Math.min(src.limit(), src.position() + allowed));
		int n = this.delegate.write(part);
		src.position(src.position() + n);
		this.writableBytes = allowed - n;
		return n;
	}

	@Override
	public FileChannel truncate(long size) throws IOException {
		if (this.failTruncate || (onDisk() && this.disk.failTruncate)) {
			throw new IOException("Input/output error (injected truncate)");
		}
		this.delegate.truncate(size);
		return this;
	}

	@Override
	public void force(boolean metaData) throws IOException {
		if (this.failForce || (onDisk() && this.disk.failForce)) {
			throw new IOException("Input/output error (injected force)");
		}
		this.delegate.force(metaData);
	}

	@Override
	public int read(ByteBuffer dst) throws IOException {
		return this.delegate.read(dst);
	}

	@Override
	public long read(ByteBuffer[] dsts, int offset, int length) throws IOException {
		return this.delegate.read(dsts, offset, length);
	}

	@Override
	public long write(ByteBuffer[] srcs, int offset, int length) throws IOException {
		return this.delegate.write(srcs, offset, length);
	}

	@Override
	public long position() throws IOException {
		return this.delegate.position();
	}

	@Override
	public FileChannel position(long newPosition) throws IOException {
		this.delegate.position(newPosition);
		return this;
	}

	@Override
	public long size() throws IOException {
		return this.delegate.size();
	}

	@Override
	public long transferTo(long position, long count, WritableByteChannel target) throws IOException {
		return this.delegate.transferTo(position, count, target);
	}

	@Override
	public long transferFrom(ReadableByteChannel src, long position, long count) throws IOException {
		return this.delegate.transferFrom(src, position, count);
	}

	@Override
	public int read(ByteBuffer dst, long position) throws IOException {
		return this.delegate.read(dst, position);
	}

	@Override
	public int write(ByteBuffer src, long position) throws IOException {
		return this.delegate.write(src, position);
	}

	@Override
	public MappedByteBuffer map(MapMode mode, long position, long size) throws IOException {
		return this.delegate.map(mode, position, size);
	}

	@Override
	public FileLock lock(long position, long size, boolean shared) throws IOException {
		return this.delegate.lock(position, size, shared);
	}

	@Override
	public FileLock tryLock(long position, long size, boolean shared) throws IOException {
		return this.delegate.tryLock(position, size, shared);
	}

	@Override
	protected void implCloseChannel() throws IOException {
		this.delegate.close();
	}

}
