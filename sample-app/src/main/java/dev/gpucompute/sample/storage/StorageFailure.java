package dev.gpucompute.sample.storage;

import java.io.File;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Instant;
import java.util.Locale;

/**
 * Why the data directory refused something, classified for the answer: a full file system
 * ({@link #noSpace()}: {@code ENOSPC} or {@code EDQUOT}; it lasts until someone frees space, so the
 * service answers 507) or any other I/O failure ({@code EIO} and the like; the service recovers by
 * itself if the disk does, so it answers 503 with {@code Retry-After}).
 *
 * <p>Java reports neither errno: the JDK puts the C library's message into the
 * {@link IOException}. So a failure counts as "no space" when a message in its cause chain is the
 * English text of {@code ENOSPC}/{@code EDQUOT}, or when the file system's usable space is below
 * what the operation needed (which also covers a C library that speaks another language).
 * Immutable.
 *
 * @param noSpace whether the file system had no room for what was written
 * @param reason a one-line description of the cause, for answers, logs and health
 * @param cause the failure
 * @param at when it happened
 */
public record StorageFailure(boolean noSpace, String reason, IOException cause, Instant at) {

	/**
	 * Classifies a failure of an operation in {@code directory} that needed about {@code neededBytes}
	 * of new space (0 when it needed none, e.g. a force).
	 */
	public static StorageFailure of(IOException cause, Path directory, long neededBytes) {
		boolean noSpace = mentionsNoSpace(cause);
		if (!noSpace && neededBytes > 0) {
			long usable = usableSpace(directory);
			noSpace = usable >= 0 && usable < neededBytes;
		}
		return new StorageFailure(noSpace, reasonOf(cause), cause, Instant.now());
	}

	/** A failure found before anything was tried: {@code neededBytes} do not fit the space left. */
	public static StorageFailure noRoom(Path directory, long neededBytes, long usableBytes) {
		String reason = "No space left on device: " + neededBytes + " bytes needed in " + directory + ", "
				+ usableBytes + " usable";
		return new StorageFailure(true, reason, new IOException(reason), Instant.now());
	}

	/**
	 * Usable bytes of the file system holding {@code directory}, or -1 when it cannot be read (the
	 * directory is missing or unreadable).
	 */
	public static long usableSpace(Path directory) {
		// File.getUsableSpace asks statvfs for the path itself, as Boot's diskSpace indicator does.
		// Files.getFileStore first looks the path up in the mount table and throws "Mount point not
		// found" in a chroot or a container whose /proc/mounts does not list the directory's mount,
		// which made the storage health check fail (and the service DOWN) on a bare-Debian rehearsal.
		try {
			File file = directory.toFile();
			long usable = file.getUsableSpace();
			return (usable == 0 && !file.isDirectory()) ? -1 : usable;
		}
		catch (RuntimeException ex) {
			return -1;
		}
	}

	private static boolean mentionsNoSpace(Throwable failure) {
		for (Throwable t = failure; t != null; t = t.getCause()) {
			String message = t.getMessage();
			if (message != null) {
				String lower = message.toLowerCase(Locale.ROOT);
				if (lower.contains("no space left on device") || lower.contains("disk quota exceeded")) {
					return true;
				}
			}
			if (t.getCause() == t) {
				break;
			}
		}
		return false;
	}

	/** The innermost message of the cause chain: the C library's text, without the wrapping. */
	private static String reasonOf(Throwable failure) {
		String reason = null;
		for (Throwable t = failure; t != null; t = (t.getCause() == t) ? null : t.getCause()) {
			if (t.getMessage() != null) {
				reason = t.getMessage();
			}
		}
		return (reason != null) ? reason : failure.getClass().getSimpleName();
	}

}
