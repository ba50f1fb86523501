package dev.gpucompute.contract.copy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import dev.gpucompute.CopyFaultInjection;
import dev.gpucompute.DeviceBuffer;
import dev.gpucompute.ElementType;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuContext.HostMemoryInfo;
import dev.gpucompute.GpuException;
import dev.gpucompute.GpuLauncher;
import dev.gpucompute.GpuStream;
import dev.gpucompute.HostArray;
import dev.gpucompute.HostBuffer;
import dev.gpucompute.StreamLease;
import dev.gpucompute.settings.KernelTiming;

/**
 * The chunked copy path on every backend (docs/runtime.md, "Copies between host and device"): copies
 * with the default chunk size and no copy threads are exact, copies larger than a small staging budget
 * reuse their chunks' staging and stay exact, copies on several streams at once stay exact, and the
 * failure of one chunk (injected at its pack, copy or unpack step) fails its copy, leaves the stream
 * and the buffer usable and holds nothing, host buffers included. The context and helpers come from
 * {@link CopyContractFixture}.
 */
public abstract class ChunkedCopyContractSuite extends CopyContractFixture {

	// ---- chunks and staging ---------------------------------------------------------------------------

	@Test
	void copiesWithTheDefaultChunkSizeAndNoCopyThreadsAreExact() {
		try (GpuContext plain = builder().kernelTiming(KernelTiming.OFF).copyThreads(0).open();
				StreamLease lease = plain.streams().acquire()) {
			GpuStream stream = lease.stream();
			// Just past two default chunks (2 MiB each), and just short of one.
			for (int n : new int[] { (4 << 20) / Float.BYTES + 3, (2 << 20) / Float.BYTES - 1 }) {
				float[] data = new float[n];
				for (int i = 0; i < n; i++) {
					data[i] = i;
				}
				GpuLauncher plainLauncher = plain.launcher();
				try (DeviceBuffer device = plainLauncher.callWithStream(stream, () -> plainLauncher.upload(HostArray.of(data)))) {
					float[] back = new float[n];
					device.download(HostArray.of(back), stream).join();
					assertThat(back).isEqualTo(data);
				}
			}
		}
	}

	@Test
	void copiesLargerThanASmallStagingBudgetReuseTheirChunksAndStayExact() {
		// Two chunks of staging for a copy of 21: each chunk's block comes back for a later chunk once the
		// stream has passed it (an upload) or it is unpacked (a download).
		try (GpuContext small = builder().kernelTiming(KernelTiming.OFF).copyChunkSize(CHUNK).copyThreads(2)
			.stagingBudget(2L * CHUNK).open(); DeviceBuffer buffer = small.launcher().allocate(20L * CHUNK + 100, ElementType.BYTE)) {
			byte[] data = randomBytes(new SplittableRandom(21), (int) buffer.byteSize());
			buffer.upload(HostArray.of(data), buffer.stream());
			byte[] back = new byte[data.length];
			buffer.download(HostArray.of(back), buffer.stream()).join();
			assertThat(back).isEqualTo(data);
			float[] floats = new float[(int) (buffer.byteSize() / Float.BYTES)];
			for (int i = 0; i < floats.length; i++) {
				floats[i] = i * 0.5f;
			}
			buffer.upload(HostArray.of(floats), buffer.stream()).join();
			float[] floatsBack = new float[floats.length];
			buffer.download(HostArray.of(floatsBack), buffer.stream()).join();
			assertThat(floatsBack).containsExactly(floats);
			small.synchronizeDevice();
			HostMemoryInfo host = awaitHost(small::hostMemory, (info) -> info.stagingBytes() == 0);
			assertThat(host.stagingBytes()).isZero();
			assertThat(host.stagingPeakBytes()).isEqualTo(2L * CHUNK);
		}
	}

	@Test
	void concurrentCopiesOnSeveralStreamsStayExact() throws Exception {
		int threads = 4;
		CyclicBarrier start = new CyclicBarrier(threads);
		ExecutorService pool = Executors.newFixedThreadPool(threads);
		try {
			List<Future<?>> workers = new ArrayList<>();
			for (int t = 0; t < threads; t++) {
				SplittableRandom random = new SplittableRandom(100 + t);
				workers.add(pool.submit(() -> {
					start.await(30, TimeUnit.SECONDS);
					for (int round = 0; round < 8; round++) {
						int n = (1 + random.nextInt(5)) * CHUNK / Float.BYTES + random.nextInt(100);
						float[] data = new float[n];
						for (int i = 0; i < n; i++) {
							data[i] = random.nextFloat();
						}
						try (StreamLease lease = this.context.streams().acquire();
								DeviceBuffer device = this.launcher.callWithStream(lease.stream(),
										() -> this.launcher.allocate(4L * n, ElementType.BYTE));
								HostBuffer host = this.context.launcher().allocateHost(4L * n)) {
							GpuStream stream = lease.stream();
							// Array up, host buffer down, host buffer up, direct buffer down: all on one stream.
							CompletableFuture<Void> up = device.upload(HostArray.of(data), stream);
							CompletableFuture<Void> down = device.download(host, stream);
							down.join();
							up.join();
							float[] viaHost = new float[n];
							host.get(0, HostArray.of(viaHost));
							assertThat(viaHost).isEqualTo(data);
							device.fill((byte) 0, stream);
							device.upload(host, stream).join();
							ByteBuffer direct = ByteBuffer.allocateDirect(4 * n).order(ByteOrder.nativeOrder());
							device.download(HostArray.of(direct), 0, stream).join();
							float[] back = new float[n];
							direct.asFloatBuffer().get(back);
							assertThat(back).isEqualTo(data);
						}
					}
					return null;
				}));
			}
			for (Future<?> worker : workers) {
				worker.get(120, TimeUnit.SECONDS);
			}
		}
		finally {
			pool.shutdownNow();
		}
		assertNothingHeld();
	}

	// ---- failures ------------------------------------------------------------------------------------

	@ParameterizedTest(name = "{0} of chunk {1}")
	@CsvSource({ "PACK, 0", "PACK, 1", "PACK, 4", "COPY, 0", "COPY, 2", "COPY, 4" })
	void aFailedChunkFailsTheUploadAndLeaksNothing(String step, int chunk) {
		float[] data = new float[(4 * CHUNK + 12) / Float.BYTES]; // 5 chunks
		java.util.Arrays.fill(data, 2.5f);
		try (StreamLease lease = this.context.streams().acquire()) {
			GpuStream stream = lease.stream();
			try (DeviceBuffer device = sentinels(4L * data.length, stream)) {
				AtomicInteger failures = this.faults.failAt(step, chunk);
				assertThatThrownBy(() -> device.upload(HostArray.of(data), stream)).isInstanceOf(GpuException.class)
					.hasMessageContaining(CopyFaultInjection.MESSAGE + ": " + step + " of chunk " + chunk);
				assertThat(failures.get()).isEqualTo(1);
				this.faults.clear();
				// The stream and the buffer still work.
				device.upload(HostArray.of(data), stream).join();
				float[] back = new float[data.length];
				device.download(HostArray.of(back), stream).join();
				assertThat(back).containsOnly(2.5f);
			}
		}
		assertNothingHeld();
	}

	@ParameterizedTest(name = "{0} of chunk {1}")
	@CsvSource({ "COPY, 0", "COPY, 3", "UNPACK, 0", "UNPACK, 2", "UNPACK, 4" })
	void aFailedChunkFailsTheDownloadAndLeaksNothing(String step, int chunk) {
		float[] data = new float[(4 * CHUNK + 12) / Float.BYTES];
		java.util.Arrays.fill(data, 7f);
		try (StreamLease lease = this.context.streams().acquire()) {
			GpuStream stream = lease.stream();
			try (DeviceBuffer device = this.launcher.callWithStream(stream, () -> this.launcher.allocate(4L * data.length, ElementType.BYTE))) {
				device.upload(HostArray.of(data), stream).join();
				this.faults.failAt(step, chunk);
				float[] back = new float[data.length];
				String expected = CopyFaultInjection.MESSAGE + ": " + step + " of chunk " + chunk;
				if (step.equals("COPY")) {
					assertThatThrownBy(() -> device.download(HostArray.of(back), stream)).isInstanceOf(GpuException.class)
						.hasMessageContaining(expected);
				}
				else {
					CompletableFuture<Void> download = device.download(HostArray.of(back), stream);
					assertThatThrownBy(download::join).isInstanceOf(CompletionException.class)
						.hasCauseInstanceOf(GpuException.class)
						.hasMessageContaining("Copying chunk " + chunk + " of a download")
						.hasRootCauseMessage(expected);
					assertThat(this.context.hostMemory().stagingBytes())
						.as("staging held once the failed download's future completed").isZero();
				}
				this.faults.clear();
				device.download(HostArray.of(back), stream).join();
				assertThat(back).containsOnly(7f);
			}
		}
		assertNothingHeld();
	}

	@ParameterizedTest(name = "{0}")
	@CsvSource({ "upload", "download" })
	void aHostBufferCopyThatCannotBeEnqueuedLeavesNothingPendingOnIt(String direction) {
		try (StreamLease lease = this.context.streams().acquire(); HostBuffer host = this.context.launcher().allocateHost(CHUNK)) {
			GpuStream stream = lease.stream();
			try (DeviceBuffer device = sentinels(CHUNK, stream)) {
				this.faults.failAt("COPY", 0);
				assertThatThrownBy(() -> {
					if (direction.equals("upload")) {
						device.upload(host, stream);
					}
					else {
						device.download(host, stream);
					}
				}).isInstanceOf(GpuException.class).hasMessageContaining(CopyFaultInjection.MESSAGE);
				this.faults.clear();
				host.put(0, HostArray.of(new byte[CHUNK])); // refused if the failed copy were still registered as pending
				host.get(0, HostArray.of(new byte[CHUNK]));
			}
		}
		assertNothingHeld();
	}

}
