package dev.gpucompute.contract.copy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.ByteBuffer;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;

import org.assertj.core.api.ThrowableAssert.ThrowingCallable;
import org.junit.jupiter.api.Test;

import dev.gpucompute.Backend;
import dev.gpucompute.ContextClosedException;
import dev.gpucompute.DeviceBuffer;
import dev.gpucompute.Dim3;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuContext.HostMemoryInfo;
import dev.gpucompute.GpuException;
import dev.gpucompute.GpuStream;
import dev.gpucompute.HostArray;
import dev.gpucompute.HostBuffer;
import dev.gpucompute.Kernel;
import dev.gpucompute.LaunchConfig;
import dev.gpucompute.StreamLease;
import dev.gpucompute.contract.ContractKernels;
import dev.gpucompute.cpu.CpuBackendProvider;
import dev.gpucompute.settings.KernelTiming;

/**
 * Copies to and from {@link HostBuffer}s on every backend (docs/runtime.md, "Copies between host and
 * device"): exact bytes at any host and device offset; a host buffer closed while a copy of it is
 * pending is unusable at once but keeps its memory, out of the pool, until the copy ends; access that
 * conflicts with a pending copy is refused naming the copy; closing the context releases host
 * buffers left open. A gate kernel holds the copies' stream so that "pending" is certain, never a
 * matter of timing. The context and helpers come from {@link CopyContractFixture}.
 */
public abstract class HostBufferCopyContractSuite extends CopyContractFixture {

	private static final LaunchConfig ONE = LaunchConfig.of(Dim3.of(1), Dim3.of(1));

	/** Long enough that a missed rendezvous is not a scheduling accident. */
	private static final int RENDEZVOUS_TIMEOUT_MS = 20_000;
	/** Holds {@code stream} in a kernel until {@link Gate#open} runs its partner on another stream. */
	private final class Gate implements AutoCloseable {

		private final StreamLease other = HostBufferCopyContractSuite.this.context.streams().acquire();

		private final DeviceBuffer flags;

		private final DeviceBuffer seen;

		private final Kernel rendezvous = HostBufferCopyContractSuite.this.launcher.load(ContractKernels.RENDEZVOUS);

		private boolean opened;

		Gate(GpuStream stream) {
			// Owned by the other stream: a first use there would otherwise wait for the gated kernel.
			this.flags = sentinels(8, this.other.stream());
			this.flags.fill((byte) 0, this.other.stream());
			this.seen = sentinels(8, this.other.stream());
			HostBufferCopyContractSuite.this.launcher.launch(stream, this.rendezvous, ONE, 0, 1, this.flags, this.seen,
					RENDEZVOUS_TIMEOUT_MS);
		}

		/** Whether the gate held until it was opened (the gated kernel saw its partner, not its timeout). */
		boolean held() {
			int[] seen = new int[2];
			this.seen.download(HostArray.of(seen), this.other.stream()).join();
			return seen[0] == 1;
		}

		void open() {
			if (!this.opened) {
				this.opened = true;
				HostBufferCopyContractSuite.this.launcher.launch(this.other.stream(), this.rendezvous, ONE, 1, 0, this.flags, this.seen,
						RENDEZVOUS_TIMEOUT_MS);
			}
		}

		@Override
		public void close() {
			open();
			this.other.stream().synchronize();
			this.flags.close();
			this.seen.close();
			this.other.close();
		}

	}

	// ---- exact bytes ---------------------------------------------------------------------------------

	@Test
	void hostBufferCopiesAreExactWithOffsets() {
		SplittableRandom random = new SplittableRandom(30);
		int size = 3 * CHUNK + 100;
		byte[] data = randomBytes(random, size);
		long[][] ranges = { { 0, 0, size }, { 1, 0, CHUNK }, { CHUNK - 1, 3, CHUNK + 2 }, { 17, CHUNK + 1, 1 },
				{ 2 * CHUNK, 5, CHUNK + 99 } };
		try (StreamLease lease = this.context.streams().acquire(); HostBuffer source = this.context.launcher().allocateHost(size);
				HostBuffer target = this.launcher.allocateHost(size + 8)) {
			GpuStream stream = lease.stream();
			assertThat(source.byteSize()).isEqualTo(size);
			assertThat(source.asByteBuffer().capacity()).as("a view covers exactly the buffer").isEqualTo(size);
			source.put(0, HostArray.of(data));
			for (long[] range : ranges) {
				int hostOffset = (int) range[0];
				int deviceOffset = (int) range[1];
				int bytes = (int) range[2];
				String what = bytes + " bytes from host offset " + hostOffset + " to device offset " + deviceOffset;
				try (DeviceBuffer device = sentinels(size + 16, stream)) {
					device.upload(source, hostOffset, deviceOffset, bytes, stream).join();
					byte[] expected = java.util.Arrays.copyOfRange(data, hostOffset, hostOffset + bytes);
					assertPlaced(bytesOf(device, stream), expected, deviceOffset, what);
					target.put(0, HostArray.of(new byte[size + 8]));
					device.download(target, deviceOffset, 8, bytes, stream).join();
					byte[] back = new byte[bytes];
					target.get(8, HostArray.of(back));
					assertThat(back).as(what + ", downloaded").isEqualTo(expected);
					byte[] before = new byte[8];
					target.get(0, HostArray.of(before));
					assertThat(before).as("bytes before the download's range").containsOnly(0);
				}
			}
			// The whole-buffer forms, and typed puts and gets through views.
			float[] floats = new float[size / Float.BYTES];
			for (int i = 0; i < floats.length; i++) {
				floats[i] = i * 0.5f;
			}
			source.put(0, HostArray.of(floats));
			assertThat(source.asFloatBuffer().get(7)).isEqualTo(3.5f);
			try (DeviceBuffer device = sentinels(size, stream)) {
				device.upload(source, stream).join();
				float[] back = new float[floats.length];
				device.download(HostArray.of(back), stream).join();
				assertThat(back).isEqualTo(floats);
			}
		}
		assertNothingHeld();
	}

	// ---- host buffers and pending copies ---------------------------------------------------------------

	@Test
	void hostBufferClosedWhileItsUploadIsPendingKeepsItsMemoryUntilTheUploadEnds() {
		SplittableRandom random = new SplittableRandom(31);
		int size = 2 * CHUNK + 40;
		byte[] original = randomBytes(random, size);
		try (StreamLease lease = this.context.streams().acquire()) {
			GpuStream stream = lease.stream();
			try (DeviceBuffer device = sentinels(size, stream); Gate gate = new Gate(stream)) {
				HostBuffer host = this.context.launcher().allocateHost(size);
				host.put(0, HostArray.of(original));
				CompletableFuture<Void> upload = device.upload(host, stream);
				host.close();
				assertThat(host.isClosed()).isTrue();
				assertThat(upload).as("the upload waits behind the gate").isNotDone();
				assertThat(this.context.hostMemory().hostBuffers()).as("the closed buffer's memory is still held")
					.isEqualTo(1);
				assertThatThrownBy(() -> host.put(0, HostArray.of(new byte[1]))).isInstanceOf(GpuException.class)
					.hasMessageContaining("used after it was closed");
				assertThatThrownBy(() -> device.upload(host, stream)).isInstanceOf(GpuException.class)
					.hasMessageContaining("used after it was closed");
				// Whatever the pool hands out now must not be the pending upload's memory.
				try (HostBuffer other = this.context.launcher().allocateHost(size)) {
					other.put(0, HostArray.of(new byte[size]));
					gate.open();
					upload.join();
				}
				assertThat(gate.held()).as("the upload was held by the gate, not by its timeout").isTrue();
				assertPlaced(bytesOf(device, stream), original, 0, "upload from a host buffer closed while pending");
			}
		}
		assertNothingHeld();
	}

	/**
	 * The semantics of close with a copy pending, all of them: close returns at once, the buffer is
	 * unusable from then on (every checked method and every new view throws, its copies too), its
	 * memory stays out of the pool (not cached, so no allocation can get it) until the copy ends, and
	 * then goes back to the pool.
	 */
	@Test
	void aHostBufferClosedWithACopyPendingIsUnusableAndItsMemoryReturnsToThePoolOnlyWhenTheCopyEnds() {
		int size = 3 * CHUNK;
		byte[] original = randomBytes(new SplittableRandom(37), size);
		try (StreamLease lease = this.context.streams().acquire()) {
			GpuStream stream = lease.stream();
			try (DeviceBuffer device = sentinels(size, stream); Gate gate = new Gate(stream)) {
				HostBuffer host = this.context.launcher().allocateHost(size);
				host.put(0, HostArray.of(original));
				HostMemoryInfo open = this.context.hostMemory();
				long block = open.hostBufferBytes();
				assertThat(block).as("the buffer's pool block").isGreaterThanOrEqualTo(size);
				CompletableFuture<Void> upload = device.upload(host, stream);
				host.close();
				assertThat(upload).as("close does not wait for the copy").isNotDone();

				// Unusable: every method but byteSize, isClosed, toString and close throws, views included.
				List<ThrowingCallable> uses = List.of(() -> host.put(CHUNK, HostArray.of(new byte[1])), () -> host.put(0, HostArray.of(new float[1])),
						() -> host.put(0, HostArray.of(ByteBuffer.allocate(4))), () -> host.get(0, HostArray.of(new byte[1])),
						() -> host.get(0, HostArray.of(new double[1])), () -> host.get(0, HostArray.of(ByteBuffer.allocate(4))), host::asByteBuffer,
						host::asFloatBuffer, host::asIntBuffer, host::asLongBuffer, host::asDoubleBuffer,
						() -> device.upload(host, stream), () -> device.download(host, stream),
						() -> this.launcher.callWithStream(stream, () -> this.launcher.upload(host)));
				for (ThrowingCallable use : uses) {
					assertThatThrownBy(use).isInstanceOf(GpuException.class)
						.hasMessage("Host buffer of " + size + " bytes used after it was closed");
				}
				assertThat(host.byteSize()).isEqualTo(size);
				assertThat(host.isClosed()).isTrue();
				assertThat(host).hasToString("HostBuffer[" + size + " bytes, closed]");
				host.close();

				// Held, not pooled, while the copy may still read it.
				HostMemoryInfo pending = this.context.hostMemory();
				assertThat(pending.hostBuffers()).as("closed but pending").isEqualTo(1);
				assertThat(pending.hostBufferBytes()).isEqualTo(block);
				assertThat(pending.cachedBytes()).as("the block is not in the pool for reuse").isEqualTo(open.cachedBytes());
				long pendingCached = pending.cachedBytes();
				gate.open();
				upload.join();
				// The copy's completion gave the block back before it completed the future, and nothing
				// else used the pool since the snapshot: back in the pool exactly once (twice would be
				// two blocks' bytes, and two later allocations could get the same memory).
				HostMemoryInfo returned = this.context.hostMemory();
				assertThat(returned.hostBuffers()).as("released when the copy ended").isZero();
				assertThat(returned.hostBufferBytes()).isZero();
				assertThat(returned.cachedBytes()).as("the block back in the pool exactly once").isEqualTo(pendingCached + block);
				try (HostBuffer first = this.context.launcher().allocateHost(size); HostBuffer second = this.context.launcher().allocateHost(size)) {
					first.put(0, HostArray.of(new byte[] { 1 }));
					second.put(0, HostArray.of(new byte[] { 2 }));
					byte[] seen = new byte[1];
					first.get(0, HostArray.of(seen));
					assertThat(seen[0]).as("two host buffers allocated after the return share no memory").isEqualTo((byte) 1);
				}
				assertThat(gate.held()).as("the upload was held by the gate, not by its timeout").isTrue();
				assertPlaced(bytesOf(device, stream), original, 0, "upload from a host buffer closed while pending");
			}
		}
		assertNothingHeld();
	}

	@Test
	void hostBufferClosedWhileADownloadIntoItIsPendingIsReleasedAfterIt() {
		try (StreamLease lease = this.context.streams().acquire()) {
			GpuStream stream = lease.stream();
			try (DeviceBuffer device = sentinels(3 * CHUNK, stream); Gate gate = new Gate(stream)) {
				HostBuffer host = this.context.launcher().allocateHost(3 * CHUNK);
				CompletableFuture<Void> download = device.download(host, stream);
				host.close();
				assertThat(download).isNotDone();
				assertThat(this.context.hostMemory().hostBuffers()).isEqualTo(1);
				gate.open();
				download.join();
				assertThat(gate.held()).as("the download was held by the gate").isTrue();
				assertThat(awaitHost(this.context::hostMemory, (info) -> info.hostBuffers() == 0).hostBuffers())
					.as("released once the download ended").isZero();
			}
		}
		assertNothingHeld();
	}

	@Test
	void hostBufferAccessThatConflictsWithAPendingCopyIsRefusedNamingTheCopy() {
		try (StreamLease lease = this.context.streams().acquire(); HostBuffer host = this.context.launcher().allocateHost(4 * CHUNK)) {
			GpuStream stream = lease.stream();
			try (DeviceBuffer device = sentinels(4 * CHUNK, stream)) {
				CompletableFuture<Void> upload;
				CompletableFuture<Void> download;
				try (Gate gate = new Gate(stream)) {
					upload = device.upload(host, 0, 0, CHUNK, stream);
					download = device.download(host, 0, 2 * CHUNK, CHUNK, stream);
					assertThatThrownBy(() -> host.put(CHUNK - 4, HostArray.of(new int[2]))).isInstanceOf(GpuException.class)
						.hasMessageContaining("cannot write bytes " + (CHUNK - 4) + " to " + (CHUNK + 4))
						.hasMessageContaining("upload to " + device)
						.hasMessageContaining("on stream " + stream.name())
						.hasMessageContaining("wait for that copy's future");
					assertThatThrownBy(() -> host.get(2 * CHUNK, HostArray.of(new byte[1]))).isInstanceOf(GpuException.class)
						.hasMessageContaining("cannot read").hasMessageContaining("download from " + device);
					// Reading what an upload reads, and anything no copy uses, is fine meanwhile.
					host.get(0, HostArray.of(new byte[CHUNK]));
					host.put(CHUNK, HostArray.of(new byte[CHUNK]));
					host.put(3 * CHUNK, HostArray.of(new byte[CHUNK]));
					assertThat(upload).isNotDone();
					gate.open();
					upload.join();
					download.join();
					assertThat(gate.held()).isTrue();
				}
				host.put(0, HostArray.of(new byte[4 * CHUNK]));
			}
		}
		assertNothingHeld();
	}

	@Test
	void closingTheContextReleasesHostBuffersLeftOpen() {
		long heldBefore = CpuBackendProvider.heldBytes();
		GpuContext other = builder().kernelTiming(KernelTiming.OFF).open();
		HostBuffer host = other.launcher().allocateHost(CHUNK);
		host.put(0, HostArray.of(new byte[] { 1, 2, 3 }));
		other.close();
		assertThatThrownBy(() -> host.put(0, HostArray.of(new byte[1]))).isInstanceOf(ContextClosedException.class);
		assertThatThrownBy(host::asByteBuffer).isInstanceOf(ContextClosedException.class);
		host.close();
		if (other.backend() == Backend.CPU) {
			assertThat(CpuBackendProvider.heldBytes()).as("off-heap memory of the CPU backend").isEqualTo(heldBefore);
		}
	}

}
