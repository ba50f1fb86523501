package dev.gpucompute.sample.storage;

import java.io.IOException;
import java.nio.file.Path;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.assertj.core.data.Offset;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * How a storage failure is classified and how the data directory's space is read. The space is read
 * with statvfs for the path itself, not through the mount table: in a chroot or a container whose
 * {@code /proc/mounts} does not list the directory's mount, {@code Files.getFileStore} throws
 * "Mount point not found" (found by the bare-Debian rehearsal of the GPU check, where the storage
 * health check failed and the service never became healthy); that case needs a chroot and is covered
 * by {@code scripts/gpu-check/rehearse-bare.sh}, not here.
 */
class StorageFailureTests {

	@TempDir
	Path dir;

	@Test
	void usableSpaceIsTheFileSystemsFigureAndMinusOneForAMissingDirectory() {
		long usable = StorageFailure.usableSpace(this.dir);
		assertThat(usable).isPositive();
		// Within what other processes may write meanwhile (64 MiB).
		assertThat(usable).isCloseTo(this.dir.toFile().getUsableSpace(), Offset.offset(64L << 20));
		assertThat(StorageFailure.usableSpace(this.dir.resolve("missing"))).isEqualTo(-1);
	}

	@Test
	void aFailureThatSaysNoSpaceIsNoSpaceWhateverTheDirectory() {
		StorageFailure failure = StorageFailure.of(new IOException("No space left on device"), this.dir.resolve("missing"), 0);
		assertThat(failure.noSpace()).isTrue();
	}

	@Test
	void anUnrelatedFailureIsNotNoSpaceWhenTheSpaceCannotBeRead() {
		// A request for more bytes than exist would say "no space" only if the space were readable.
		StorageFailure failure = StorageFailure.of(new IOException("Input/output error"), this.dir.resolve("missing"), Long.MAX_VALUE);
		assertThat(failure.noSpace()).isFalse();
		StorageFailure full = StorageFailure.of(new IOException("Input/output error"), this.dir, Long.MAX_VALUE);
		assertThat(full.noSpace()).isTrue();
	}

}
