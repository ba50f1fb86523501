package dev.gpucompute.sample.storage;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.OpenOption;
import java.nio.file.Path;
import java.util.Set;
import java.util.function.Predicate;

/**
 * A disk that fails on demand: a {@link ChannelOpener} whose channels ({@link FaultyChannel}) share
 * its switches, for tests of the store and the service under storage faults without a broken
 * disk. {@link #spaceLeft} is what all its files together may still write before a write fails
 * with "No space left on device" (a full disk); {@link #failForce} and {@link #failTruncate} make
 * those calls fail with an I/O error. {@link #affects} limits the faults to some files (only
 * logs, only snapshots). Thread-safe.
 */
public final class FaultyDisk implements ChannelOpener {

	/** Bytes that relative writes of all files may still write; negative: no limit. */
	private long spaceLeft = -1;

	/** Whether forces fail (EIO). */
	public volatile boolean failForce;

	/** Whether truncates fail (EIO). */
	public volatile boolean failTruncate;

	private volatile Predicate<Path> affects = (file) -> true;

	@Override
	public FileChannel open(Path file, Set<? extends OpenOption> options) throws IOException {
		return new FaultyChannel(file, options, this);
	}

	/** The files of {@code directory}, written through this disk. */
	public CollectionFiles files(Path directory) {
		return new CollectionFiles(directory, this);
	}

	/** Lets relative writes write {@code bytes} more before the disk is full; negative: no limit. */
	public synchronized void spaceLeft(long bytes) {
		this.spaceLeft = bytes;
	}

	/** Faults affect only files whose name ends with {@code suffix} (".wal" logs, ".tmp" new snapshots). */
	public void onlyFilesEndingWith(String suffix) {
		this.affects = (file) -> file.getFileName().toString().endsWith(suffix);
	}

	/** Faults affect every file. */
	public void allFiles() {
		this.affects = (file) -> true;
	}

	/** No faults, no limit. */
	public synchronized void heal() {
		this.spaceLeft = -1;
		this.failForce = false;
		this.failTruncate = false;
	}

	boolean affects(Path file) {
		return this.affects.test(file);
	}

	/** Takes up to {@code wanted} bytes of space for a write; throws when none is left. */
	synchronized int take(int wanted) throws IOException {
		if (this.spaceLeft < 0 || wanted == 0) {
			return wanted;
		}
		if (this.spaceLeft == 0) {
			throw new IOException("No space left on device (injected)");
		}
		int granted = (int) Math.min(wanted, this.spaceLeft);
		this.spaceLeft -= granted;
		return granted;
	}

	/** Returns space taken but not written. */
	synchronized void giveBack(int bytes) {
		if (this.spaceLeft >= 0) {
			this.spaceLeft += bytes;
		}
	}

}
