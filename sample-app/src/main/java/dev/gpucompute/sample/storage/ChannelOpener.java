package dev.gpucompute.sample.storage;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.OpenOption;
import java.nio.file.Path;
import java.util.Set;

/**
 * Opens the files of the data directory: snapshots ({@link CollectionFiles}) and write-ahead logs
 * ({@link WriteAheadLog}). The service uses {@link #DEFAULT}; tests substitute channels that fail on
 * demand (a full disk, a failing force), so that every storage failure path runs without a broken
 * disk. Implementations must be thread-safe.
 */
@FunctionalInterface
public interface ChannelOpener {

	/** {@link FileChannel#open(Path, Set, java.nio.file.attribute.FileAttribute...)}. */
	ChannelOpener DEFAULT = FileChannel::open;

	/** Opens {@code file} with {@code options}; the caller closes the channel. */
	FileChannel open(Path file, Set<? extends OpenOption> options) throws IOException;

}
