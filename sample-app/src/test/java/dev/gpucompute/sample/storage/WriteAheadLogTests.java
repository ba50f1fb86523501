package dev.gpucompute.sample.storage;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

import dev.gpucompute.sample.QuietOutputExtension;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The write-ahead log under failures injected with {@link FaultyChannel}: a failed append leaves no
 * partial record (or a broken log that refuses writes until a reset), a failed force breaks the log,
 * a failed reset never reuses earlier positions, and damage in the middle of a log is an error, not
 * a torn tail.
 */
@ExtendWith(QuietOutputExtension.class)
class WriteAheadLogTests {

	@TempDir
	Path dir;

	private FaultyChannel channel;

	private WriteAheadLog open(Path file) throws IOException {
		return new WriteAheadLog(file, 0, true, (path, options) -> this.channel = new FaultyChannel(path, options));
	}

	private static long append(WriteAheadLog log, String id, int dimension) throws IOException {
		float[] row = new float[dimension];
		for (int i = 0; i < dimension; i++) {
			row[i] = id.hashCode() + i;
		}
		return log.appendUpsert(new String[] { id }, 1, dimension, row);
	}

	private static List<String> replayIds(Path file) throws IOException {
		List<String> ids = new ArrayList<>();
		WriteAheadLog.replay(file, (record) -> ids.add(record.ids()[0]));
		return ids;
	}

	@Test
	void aFailedAppendIsCutOffSoThatLaterRecordsReplay() throws IOException {
		Path file = this.dir.resolve("c.wal");
		try (WriteAheadLog log = open(file)) {
			log.sync(append(log, "r0", 4));
			long sizeBefore = Files.size(file);
			// Larger than the staging buffer, so the record is drained in several writes; the second fails.
			this.channel.writableBytes = 1 << 20;
			assertThatThrownBy(() -> append(log, "big", 400_000)).isInstanceOf(IOException.class)
				.hasMessageContaining("No space left");
			this.channel.writableBytes = -1;
			assertThat(Files.size(file)).isEqualTo(sizeBefore);
			assertThat(log.broken()).isFalse();
			long end = append(log, "r1", 4);
			log.sync(end);
			assertThat(end).isEqualTo(Files.size(file));
		}
		assertThat(replayIds(file)).containsExactly("r0", "r1");
		assertThat(WriteAheadLog.replay(file, null).droppedBytes()).isZero();
	}

	@Test
	void aFailedAppendThatCannotBeCutOffBreaksTheLogUntilAReset() throws IOException {
		Path file = this.dir.resolve("c.wal");
		try (WriteAheadLog log = open(file)) {
			long first = append(log, "r0", 4);
			log.sync(first);
			this.channel.writableBytes = 10;
			this.channel.failTruncate = true;
			assertThatThrownBy(() -> append(log, "r1", 4)).isInstanceOf(IOException.class);
			this.channel.writableBytes = -1;
			this.channel.failTruncate = false;

			assertThat(log.broken()).isTrue();
			assertThatThrownBy(() -> append(log, "r2", 4)).isInstanceOf(IOException.class)
				.hasMessageContaining("unusable since an earlier failure");
			// What was synced before stays answered; nothing new can be synced.
			log.sync(first);
			assertThatThrownBy(() -> log.sync(first + 1)).hasMessageContaining("unusable");

			log.reset(); // after a snapshot holds everything
			assertThat(log.broken()).isFalse();
			long next = append(log, "r3", 4);
			assertThat(next).isGreaterThan(first);
			log.sync(next);
		}
		assertThat(replayIds(file)).containsExactly("r3");
	}

	@Test
	void aFailedForceBreaksTheLogEvenIfALaterForceWouldSucceed() throws IOException {
		Path file = this.dir.resolve("c.wal");
		try (WriteAheadLog log = open(file)) {
			long first = append(log, "r0", 4);
			this.channel.failForce = true;
			assertThatThrownBy(() -> log.sync(first)).hasMessageContaining("injected force");
			this.channel.failForce = false;

			assertThat(log.broken()).isTrue();
			assertThatThrownBy(() -> log.sync(first)).hasMessageContaining("unusable");
			assertThatThrownBy(() -> append(log, "r1", 4)).hasMessageContaining("unusable");
			long forces = log.forces();
			log.reset();
			assertThat(log.broken()).isFalse();
			log.sync(first); // the snapshot holds it
			assertThat(log.forces()).isEqualTo(forces);
			long next = append(log, "r2", 4);
			log.sync(next);
			assertThat(log.forces()).isEqualTo(forces + 1);
		}
	}

	@Test
	void aResetWhoseForceFailsNeverReusesEarlierPositions() throws IOException {
		Path file = this.dir.resolve("c.wal");
		try (WriteAheadLog log = open(file)) {
			long first = append(log, "r0", 4);
			log.sync(first);
			this.channel.failForce = true;
			assertThatThrownBy(log::reset).hasMessageContaining("injected force");
			this.channel.failForce = false;

			// The file is empty and the positions moved on; the log waits for a reset that succeeds.
			assertThat(log.size()).isZero();
			assertThat(log.broken()).isTrue();
			assertThatThrownBy(() -> append(log, "r1", 4)).hasMessageContaining("unusable");
			log.reset();
			long forces = log.forces();
			long next = append(log, "r1", 4);
			assertThat(next).isGreaterThan(first);
			log.sync(next);
			assertThat(log.forces()).isEqualTo(forces + 1);
		}
		assertThat(replayIds(file)).containsExactly("r1");
	}

	@Test
	void discardingCutsOffTheLastRecordsForGoodAndKeepsPositionsGrowing() throws IOException {
		Path file = this.dir.resolve("c.wal");
		try (WriteAheadLog log = open(file)) {
			long kept = append(log, "r0", 4);
			log.sync(kept);
			append(log, "gone1", 4);
			long last = append(log, "gone2", 4);
			long forces = log.forces();

			log.discardFrom(kept);

			assertThat(Files.size(file)).isEqualTo(kept);
			assertThat(log.forces()).as("the cut is forced through the channel, not counted as a sync").isEqualTo(forces);
			assertThat(log.broken()).isFalse();
			long next = append(log, "r1", 4);
			assertThat(next).as("positions never repeat, so no waiter mistakes a cut record for a synced one")
				.isGreaterThan(last);
			log.sync(next);
			assertThat(log.forces()).isEqualTo(forces + 1);
			assertThatThrownBy(() -> log.discardFrom(0)).isInstanceOf(IllegalArgumentException.class);
		}
		assertThat(replayIds(file)).containsExactly("r0", "r1");
	}

	@Test
	void aFailedForceIsFollowedByACutThatLeavesNoRecordOfTheFailedWrites() throws IOException {
		Path file = this.dir.resolve("c.wal");
		try (WriteAheadLog log = open(file)) {
			long kept = append(log, "r0", 4);
			log.sync(kept);
			long failed = append(log, "failed", 4);
			this.channel.failForce = true;
			assertThatThrownBy(() -> log.sync(failed)).hasMessageContaining("injected force");
			// The cut's own force fails as well: the log stays broken, the file is cut all the same.
			assertThatThrownBy(() -> log.discardFrom(kept)).hasMessageContaining("injected force");
			assertThat(Files.size(file)).isEqualTo(kept);
			this.channel.failForce = false;
			assertThat(log.broken()).as("only a snapshot makes it usable again").isTrue();
			assertThatThrownBy(() -> append(log, "r1", 4)).hasMessageContaining("unusable");
			assertThat(log.failure()).hasMessageContaining("injected force");
			log.reset();
			log.sync(append(log, "r1", 4));
		}
		assertThat(replayIds(file)).containsExactly("r1");
	}

	@Test
	void aCutThatCannotTruncateBreaksTheLog() throws IOException {
		Path file = this.dir.resolve("c.wal");
		try (WriteAheadLog log = open(file)) {
			long kept = append(log, "r0", 4);
			log.sync(kept);
			append(log, "gone", 4);
			this.channel.failTruncate = true;
			assertThatThrownBy(() -> log.discardFrom(kept)).hasMessageContaining("injected truncate");
			this.channel.failTruncate = false;
			assertThat(log.broken()).isTrue();
			assertThatThrownBy(() -> append(log, "r1", 4)).hasMessageContaining("unusable");
		}
	}

	@Test
	void aConstructorThatFailsClosesItsChannel() throws IOException {
		Path file = this.dir.resolve("c.wal");
		Files.write(file, new byte[100]);
		FaultyChannel[] opened = new FaultyChannel[1];
		assertThatThrownBy(() -> new WriteAheadLog(file, 0, true, (path, options) -> {
			opened[0] = new FaultyChannel(path, options);
			opened[0].failTruncate = true;
			return opened[0];
		})).hasMessageContaining("injected truncate");
		assertThat(opened[0].isOpen()).isFalse();
	}

	@Test
	void aDamagedRecordFollowedByAnIntactOneIsAnError() throws IOException {
		Path file = this.dir.resolve("c.wal");
		int recordLength;
		try (WriteAheadLog log = open(file)) {
			for (int r = 0; r < 3; r++) {
				log.sync(append(log, "id" + r, 2));
			}
			recordLength = (int) (log.size() / 3);
		}
		byte[] bytes = Files.readAllBytes(file);
		bytes[recordLength + 12] ^= 0x10;
		Files.write(file, bytes);

		assertThatThrownBy(() -> WriteAheadLog.replay(file, null)).isInstanceOf(IOException.class)
			.hasMessageContaining("damaged in the middle")
			.hasMessageContaining("offset " + recordLength + ", followed by an intact record at offset "
					+ (2 * recordLength));
	}

	@Test
	void unforcedPagesMissingAfterAnOsCrashEndTheReplayThere() throws IOException {
		Path file = this.dir.resolve("c.wal");
		int recordLength;
		try (WriteAheadLog log = open(file)) {
			for (int r = 0; r < 3; r++) {
				append(log, "id" + r, 300); // records of about 1.2 KB, over two disk blocks each
			}
			recordLength = (int) (log.size() / 3);
		}
		// Power loss: a block of the second record never reached the disk, the third record did.
		byte[] bytes = Files.readAllBytes(file);
		int block = (recordLength + 511) / 512 * 512;
		java.util.Arrays.fill(bytes, block, block + 512, (byte) 0);
		Files.write(file, bytes);
		List<String> ids = new ArrayList<>();

		WriteAheadLog.Replayed replayed = WriteAheadLog.replay(file, (record) -> ids.add(record.ids()[0]));

		assertThat(ids).containsExactly("id0");
		assertThat(replayed.validLength()).isEqualTo(recordLength);
	}

	@Test
	void aLogAllocatesItsStagingOnlyWhenWrittenAndSizedToItsRecords() throws IOException {
		Path file = this.dir.resolve("c.wal");
		// Appends of every size round trip, whatever the staging buffer's size at the time.
		try (WriteAheadLog log = open(file)) {
			log.sync(append(log, "small", 2));
			log.sync(append(log, "large", 300_000));
			log.sync(append(log, "small2", 3));
		}
		List<WriteAheadLog.Upsert> records = new ArrayList<>();
		WriteAheadLog.replay(file, records::add);
		assertThat(records).extracting((record) -> record.ids()[0]).containsExactly("small", "large", "small2");
		assertThat(records.get(1).rows()).hasSize(300_000);
		assertThat(records.get(1).rows()[299_999]).isEqualTo("large".hashCode() + 299_999f);
	}

}
