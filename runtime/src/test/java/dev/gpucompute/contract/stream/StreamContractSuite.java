package dev.gpucompute.contract.stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

import org.junit.jupiter.api.Test;

import dev.gpucompute.DeviceBuffer;
import dev.gpucompute.ElementType;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuEvent;
import dev.gpucompute.GpuException;
import dev.gpucompute.GpuLauncher;
import dev.gpucompute.GpuStream;
import dev.gpucompute.Kernel;
import dev.gpucompute.StreamLease;
import dev.gpucompute.contract.ContractKernels;
import dev.gpucompute.contract.GpuContractFixture;
import dev.gpucompute.settings.DefaultStreamMode;
import dev.gpucompute.settings.KernelTiming;

/**
 * Streams and events on every backend (docs/runtime.md, "Semantics"): work on one stream runs in
 * submission order and never overlaps, work on two streams overlaps, events and stream waits order
 * work across streams without blocking the host, the default streams (per-thread and legacy) really
 * wait when synchronised, events time only when recorded and are recycled, and a buffer used on a
 * stream other than its own is ordered after, and freed only after, that use. A subclass supplies the
 * backend through {@link #builder()}; the context and helpers come from {@link GpuContractFixture}.
 */
public abstract class StreamContractSuite extends GpuContractFixture {

	// ---- ordering and concurrency --------------------------------------------------------

	@Test
	void workOnOneStreamRunsInSubmissionOrder() {
		Kernel append = kernel(ContractKernels.APPEND);
		try (StreamLease lease = this.pool.acquire(); DeviceBuffer log = zeros(201)) {
			GpuStream stream = lease.stream();
			stream.waitFor(log.stream());
			for (int id = 0; id < 200; id++) {
				this.launcher.launch(stream, append, ONE, log, id);
			}
			int[] result = read(log, 201, stream);
			assertThat(result[0]).isEqualTo(200);
			for (int id = 0; id < 200; id++) {
				assertThat(result[1 + id]).as("entry %d", id).isEqualTo(id);
			}
		}
		assertNothingLeaked();
	}

	@Test
	void workOnTwoStreamsOverlapsProvenByRendezvous() {
		Kernel rendezvous = kernel(ContractKernels.RENDEZVOUS);
		try (StreamLease a = this.pool.acquire(); StreamLease b = this.pool.acquire();
				DeviceBuffer flags = zeros(2); DeviceBuffer seen = zeros(2)) {
			GpuStream setup = flags.stream();
			a.stream().waitFor(setup);
			b.stream().waitFor(setup);
			this.launcher.launch(a.stream(), rendezvous, ONE, 0, 1, flags, seen, RENDEZVOUS_TIMEOUT_MS);
			this.launcher.launch(b.stream(), rendezvous, ONE, 1, 0, flags, seen, RENDEZVOUS_TIMEOUT_MS);
			a.stream().synchronize();
			b.stream().synchronize();
			assertThat(read(seen, 2, a.stream())).as("each kernel saw the other running").containsExactly(1, 1);
		}
		assertNothingLeaked();
	}

	@Test
	void workOnOneStreamDoesNotOverlap() {
		Kernel rendezvous = kernel(ContractKernels.RENDEZVOUS);
		try (StreamLease a = this.pool.acquire(); DeviceBuffer flags = zeros(2); DeviceBuffer seen = zeros(2)) {
			a.stream().waitFor(flags.stream());
			// The first kernel must give up waiting, because the second can only start after it.
			this.launcher.launch(a.stream(), rendezvous, ONE, 0, 1, flags, seen, 200);
			this.launcher.launch(a.stream(), rendezvous, ONE, 1, 0, flags, seen, 200);
			assertThat(read(seen, 2, a.stream())).containsExactly(0, 1);
		}
		assertNothingLeaked();
	}

	@Test
	void eventOrdersWorkAcrossStreamsWithoutBlockingTheHost() {
		Kernel slow = kernel(ContractKernels.SLEEP_THEN_SET);
		Kernel copy = kernel(ContractKernels.COPY_CELL);
		try (StreamLease a = this.pool.acquire(); StreamLease b = this.pool.acquire();
				DeviceBuffer cells = zeros(2); GpuEvent written = this.context.events().create()) {
			a.stream().waitFor(cells.stream());
			b.stream().waitFor(cells.stream());
			// Long enough that a stalled CI machine cannot finish it before the check below.
			this.launcher.launch(a.stream(), slow, ONE, cells, 0, 7, 1000);
			a.stream().record(written);
			b.stream().waitFor(written);
			assertThat(written.isComplete()).as("host did not wait for the record").isFalse();
			this.launcher.launch(b.stream(), copy, ONE, cells, 0, cells, 1, 2);
			assertThat(read(cells, 2, b.stream())).containsExactly(7, 14);
			assertThat(written.isComplete()).isTrue();
		}
		assertNothingLeaked();
	}

	@Test
	void streamWaitsForAnotherStream() {
		Kernel slow = kernel(ContractKernels.SLEEP_THEN_SET);
		Kernel copy = kernel(ContractKernels.COPY_CELL);
		try (StreamLease a = this.pool.acquire(); StreamLease b = this.pool.acquire(); DeviceBuffer cells = zeros(2)) {
			a.stream().waitFor(cells.stream());
			this.launcher.launch(a.stream(), slow, ONE, cells, 0, 5, 200);
			b.stream().waitFor(a.stream());
			this.launcher.launch(b.stream(), copy, ONE, cells, 0, cells, 1, 3);
			assertThat(read(cells, 2, b.stream())).containsExactly(5, 15);
		}
		assertNothingLeaked();
	}

	@Test
	void waitingOnAnEventNeverRecordedDoesNotWait() {
		Kernel copy = kernel(ContractKernels.COPY_CELL);
		try (StreamLease a = this.pool.acquire(); GpuEvent never = this.context.events().create();
				DeviceBuffer cells = zeros(2)) {
			assertThat(never.isComplete()).isTrue();
			assertThatCode(never::synchronize).doesNotThrowAnyException();
			a.stream().waitFor(cells.stream()).waitFor(never);
			this.launcher.launch(a.stream(), copy, ONE, cells, 0, cells, 1, 1);
			a.stream().synchronize();
			assertThat(a.stream().isIdle()).isTrue();
		}
		assertNothingLeaked();
	}

	@Test
	void perThreadDefaultStreamSynchronizeReallyWaits() {
		assertDefaultStreamSynchronizeWaits(this.context);
	}

	@Test
	void legacyDefaultStreamSynchronizeReallyWaits() {
		try (GpuContext legacy = builder().defaultStream(DefaultStreamMode.LEGACY).kernelTiming(KernelTiming.OFF)
			.open()) {
			assertThat(legacy.defaultStream().kind()).isEqualTo(GpuStream.Kind.DEFAULT_LEGACY);
			assertDefaultStreamSynchronizeWaits(legacy);
		}
	}

	private static void assertDefaultStreamSynchronizeWaits(GpuContext context) {
		GpuLauncher launcher = context.launcher();
		Kernel slow = launcher.load(ContractKernels.SLEEP_THEN_SET);
		GpuStream stream = context.defaultStream();
		try (DeviceBuffer cell = launcher.allocate(4, ElementType.BYTE)) {
			launcher.launch(slow, ONE, cell, 0, 1, 1000);
			assertThat(stream.isIdle()).as("the kernel is still running").isFalse();
			stream.synchronize();
			assertThat(stream.isIdle()).as("synchronize returned only after the kernel").isTrue();
			launcher.launch(slow, ONE, cell, 0, 2, 300);
			launcher.currentStream().synchronize();
			assertThat(stream.isIdle()).isTrue();
		}
	}

	@Test
	void perThreadDefaultStreamsAreDistinctPerThread() throws Exception {
		GpuStream mine = this.context.defaultStream();
		assertThat(mine.kind()).isEqualTo(GpuStream.Kind.DEFAULT_PER_THREAD);
		ExecutorService other = Executors.newSingleThreadExecutor();
		try {
			GpuStream theirs = other.submit(() -> this.context.defaultStream()).get();
			assertThat(theirs).isNotSameAs(mine);
			assertThatThrownBy(theirs::synchronize).isInstanceOf(GpuException.class)
				.hasMessageContaining("per-thread default stream");
		}
		finally {
			other.shutdown();
		}
	}

	// ---- events ------------------------------------------------------------------------------------

	@Test
	void elapsedTimeNeedsRecordedTimingEvents() {
		Kernel slow = kernel(ContractKernels.SLEEP_THEN_SET);
		try (GpuEvent start = this.context.events().createTiming(); GpuEvent end = this.context.events().createTiming();
				GpuEvent plain = this.context.events().create(); StreamLease lease = this.pool.acquire();
				DeviceBuffer cell = this.launcher.allocate(4, ElementType.BYTE)) {
			assertThatThrownBy(() -> end.elapsedSince(start)).isInstanceOf(GpuException.class)
				.hasMessageContaining("never recorded");
			lease.stream().waitFor(cell.stream());
			lease.stream().record(start);
			this.launcher.launch(lease.stream(), slow, ONE, cell, 0, 1, 50);
			lease.stream().record(end);
			lease.stream().record(plain);
			assertThat(end.elapsedSince(start)).isGreaterThan(Duration.ZERO);
			assertThatThrownBy(() -> plain.elapsedSince(start)).isInstanceOf(GpuException.class)
				.hasMessageContaining("timing events");
		}
		assertNothingLeaked();
	}

	@Test
	void aNewEventIsCompleteEvenWhenTheRegistryRecyclesABusyOne() {
		Kernel slow = kernel(ContractKernels.SLEEP_THEN_SET);
		// Loaded before a's kernel starts: on CUDA a module load waits for the work in flight, so a load
		// inside the loop returned only after a's 1 s kernel and the check below failed.
		Kernel copy = kernel(ContractKernels.COPY_CELL);
		try (StreamLease a = this.pool.acquire(); StreamLease b = this.pool.acquire(); DeviceBuffer cell = zeros(1)) {
			a.stream().waitFor(cell.stream());
			this.launcher.launch(a.stream(), slow, ONE, cell, 0, 1, 1000);
			// The wait takes an internal event, records it on a's busy stream and hands it back at once.
			b.stream().waitFor(a.stream());
			for (int i = 0; i < 4; i++) {
				try (GpuEvent fresh = this.context.events().create()) {
					assertThat(fresh.isRecorded()).isFalse();
					assertThat(fresh.isComplete()).as("an event never recorded is complete").isTrue();
					fresh.synchronize();
					assertThat(a.stream().isIdle()).as("synchronising it did not wait for a's 1 s kernel").isFalse();
					this.launcher.launch(b.stream(), copy, ONE, cell, 0, cell, 0, 1);
					b.stream().waitFor(fresh);
				}
			}
			assertThat(read(cell, 1, b.stream())).containsExactly(1);
		}
		assertNothingLeaked();
	}

	@Test
	void eventsAreRecycledAndCountedBackToZero() {
		int createdBefore = (int) this.context.events().stats().created();
		for (int i = 0; i < 50; i++) {
			try (StreamLease lease = this.pool.acquire(); GpuEvent event = this.context.events().create()) {
				lease.stream().record(event);
				event.synchronize();
			}
		}
		assertThat(this.context.events().stats().created() - createdBefore).as("recycled, not created anew")
			.isLessThanOrEqualTo(1);
		GpuEvent closedTwice = this.context.events().create();
		closedTwice.close();
		closedTwice.close();
		assertThatThrownBy(closedTwice::synchronize).isInstanceOf(GpuException.class)
			.hasMessageContaining("after it was closed");
		assertNothingLeaked();
	}

	// ---- buffers used across streams -----------------------------------------------------------------

	@Test
	void firstUseOnAnotherStreamWaitsForTheOwningStream() {
		Kernel slow = kernel(ContractKernels.SLEEP_THEN_SET);
		Kernel copy = kernel(ContractKernels.COPY_CELL);
		try (StreamLease a = this.pool.acquire(); StreamLease b = this.pool.acquire()) {
			DeviceBuffer cell = this.launcher.callWithStream(a.stream(), () -> this.launcher.allocate(4, ElementType.BYTE));
			DeviceBuffer out = this.launcher.callWithStream(b.stream(), () -> this.launcher.allocate(4, ElementType.BYTE));
			try {
				assertThat(cell.stream()).isSameAs(a.stream());
				this.launcher.launch(a.stream(), slow, ONE, cell, 0, 11, 200);
				// No explicit wait: the first use of cell on b is ordered after a's work so far.
				this.launcher.launch(b.stream(), copy, ONE, cell, 0, out, 0, 1);
				assertThat(read(out, 1, b.stream())).containsExactly(11);
			}
			finally {
				cell.close();
				out.close();
			}
		}
		assertNothingLeaked();
	}

	@Test
	void bufferUsedOnAnotherStreamIsFreedOnlyAfterThatUse() {
		Kernel slow = kernel(ContractKernels.SLEEP_THEN_SET);
		Kernel copy = kernel(ContractKernels.COPY_CELL);
		try (StreamLease other = this.pool.acquire(); DeviceBuffer keep = zeros(1)) {
			DeviceBuffer temp = zeros(1);
			other.stream().waitFor(temp.stream());
			// Slow use on another stream, then close right away: the free must wait for it.
			this.launcher.launch(other.stream(), slow, ONE, temp, 0, 9, 200);
			this.launcher.launch(other.stream(), copy, ONE, temp, 0, keep, 0, 1);
			temp.close();
			assertThat(read(keep, 1, other.stream())).containsExactly(9);
		}
		assertNothingLeaked();
	}

}
