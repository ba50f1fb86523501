package dev.gpucompute.internal.memory;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.SplittableRandom;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import dev.gpucompute.Backend;
import dev.gpucompute.DeviceBuffer;
import dev.gpucompute.ElementType;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuContext.HostMemoryInfo;
import dev.gpucompute.GpuStream;
import dev.gpucompute.HostArray;
import dev.gpucompute.KernelSource;
import dev.gpucompute.LaunchConfig;
import dev.gpucompute.ParamType;
import dev.gpucompute.StagingExhaustedException;
import dev.gpucompute.StreamLease;

/**
 * A copy larger than its staging blocks, queued behind a kernel that holds its stream: the calling
 * thread waits for its own blocks to come back (it must enqueue every chunk before it returns, so
 * that later work on the stream cannot overtake them), but at most the staging timeout, then it
 * throws {@link StagingExhaustedException}; the chunks it enqueued end on the stream and give their
 * staging back. On the CPU backend with 64 KiB chunks: 64 chunks, 8 blocks per copy, a 200 ms
 * staging timeout, and a kernel that waits on a latch (up to 10 s: without the bound the call only
 * returns once the kernel gave up, and its outcome tells which happened, not a stopwatch).
 */
class ChunkedCopyWaitTests {

	private static final int CHUNK = 64 * 1024;

	private static final int CHUNKS = 64;

	/** Blocks a copy holds: copyThreads 2 gives two per packing thread, 6, at least 8. */
	private static final int BLOCKS = 8;

	private final CountDownLatch release = new CountDownLatch(1);

	/** Set when the gate kernel stops holding its stream, released or not. */
	private final AtomicBoolean gateEnded = new AtomicBoolean();

	private final KernelSource gate = KernelSource.named("gate").params(ParamType.INT).cpu((block, args) -> {
		try {
			this.release.await(10, TimeUnit.SECONDS);
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
		}
		finally {
			this.gateEnded.set(true);
		}
	});

	private GpuContext context;

	private StreamLease lease;

	private DeviceBuffer buffer;

	private final byte[] data = new byte[CHUNKS * CHUNK];

	@BeforeEach
	void open() {
		this.context = GpuContext.builder()
			.backend(Backend.CPU)
			.cpuThreads(2)
			.poolSize(2)
			.copyChunkSize(CHUNK)
			.copyThreads(2)
			.stagingTimeout(Duration.ofMillis(200))
			.drainTimeout(Duration.ofMillis(300))
			.open();
		this.lease = this.context.streams().acquire();
		GpuStream stream = this.lease.stream();
		new SplittableRandom(11).nextBytes(this.data);
		this.buffer = this.context.launcher().callWithStream(stream,
				() -> this.context.launcher().allocate(this.data.length, ElementType.BYTE));
		this.buffer.upload(HostArray.of(this.data), stream).join();
	}

	@AfterEach
	void close() {
		this.release.countDown();
		this.context.close();
	}

	private void holdTheStream() {
		this.context.launcher().launch(this.lease.stream(), this.context.launcher().load(this.gate), LaunchConfig.linear(1, 1), 0);
	}

	/** Opens the gate, waits for the stream, and checks that every block came back and the buffer still copies. */
	private void afterTheGate(String what) {
		this.release.countDown();
		this.lease.stream().synchronize();
		HostMemoryInfo host = awaitNoStaging();
		assertThat(host.stagingBytes()).as("staging held once the stream passed the %s's chunks", what).isZero();
		byte[] back = new byte[this.data.length];
		this.buffer.download(HostArray.of(back), this.lease.stream()).join();
		assertThat(back).as("the buffer after the gate").isEqualTo(this.data);
	}

	@Test
	void aDownloadBehindAKernelThatHoldsItsStreamThrowsAfterTheStagingTimeoutNotWhenTheKernelEnds() {
		GpuStream stream = this.lease.stream();
		holdTheStream();
		long timeoutsBefore = this.context.hostMemory().stagingTimeouts();
		byte[] back = new byte[this.data.length];
		assertThatThrownBy(() -> this.buffer.download(HostArray.of(back), stream)).isInstanceOf(StagingExhaustedException.class)
			.hasMessageContaining("a download of 64 chunks of 65536 bytes waited 200 ms for one of its 8 staging blocks")
			.hasMessageContaining("stream " + stream.name() + " had not passed the 8 chunks it had enqueued")
			.satisfies((ex) -> assertThat(((StagingExhaustedException) ex).requestedBytes()).isEqualTo(CHUNK));
		assertThat(this.gateEnded).as("the kernel still held the stream when the call returned").isFalse();
		HostMemoryInfo waiting = this.context.hostMemory();
		assertThat(waiting.stagingTimeouts()).as("counted as a staging timeout").isEqualTo(timeoutsBefore + 1);
		assertThat(waiting.stagingBytes()).as("the blocks of the chunks on the stream").isEqualTo((long) BLOCKS * CHUNK);
		afterTheGate("download");
	}

	@Test
	void anUploadBehindAKernelThatHoldsItsStreamThrowsAfterTheStagingTimeoutNotWhenTheKernelEnds() {
		GpuStream stream = this.lease.stream();
		holdTheStream();
		long timeoutsBefore = this.context.hostMemory().stagingTimeouts();
		assertThatThrownBy(() -> this.buffer.upload(HostArray.of(new byte[this.data.length]), stream))
			.isInstanceOf(StagingExhaustedException.class)
			.hasMessageContaining("an upload of 64 chunks of 65536 bytes waited 200 ms for one of its 8 staging blocks")
			.hasMessageContaining("had not passed the 8 chunks it had enqueued");
		assertThat(this.gateEnded).as("the kernel still held the stream when the call returned").isFalse();
		assertThat(this.context.hostMemory().stagingTimeouts()).isEqualTo(timeoutsBefore + 1);
		// The upload's first 8 chunks (zeros) ran after the gate: put the data back before the check.
		this.release.countDown();
		this.buffer.upload(HostArray.of(this.data), stream).join();
		afterTheGate("upload");
	}

	/** Staging goes back when the stream has passed it, which the completion thread sees a moment later. */
	private HostMemoryInfo awaitNoStaging() {
		long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
		HostMemoryInfo info = this.context.hostMemory();
		while (info.stagingBytes() != 0 && System.nanoTime() < deadline) {
			try {
				Thread.sleep(2);
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
				break;
			}
			info = this.context.hostMemory();
		}
		return info;
	}

}
