package dev.gpucompute.contract.copy;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;

import dev.gpucompute.CopyFaultInjection;
import dev.gpucompute.DeviceBuffer;
import dev.gpucompute.ElementType;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuContext.HostMemoryInfo;
import dev.gpucompute.GpuContextBuilder;
import dev.gpucompute.GpuLauncher;
import dev.gpucompute.GpuStream;
import dev.gpucompute.HostArray;
import dev.gpucompute.StreamPool.PoolStats;
import dev.gpucompute.settings.KernelTiming;

/**
 * The fixture of the copy contract suites ({@link HostArrayCopyContractSuite},
 * {@link HostBufferCopyContractSuite}, {@link ChunkedCopyContractSuite}; docs/runtime.md, "Copies
 * between host and device"): a context per test whose chunks are made small (64 KiB), so that every
 * boundary case is cheap, the helpers those suites share (device buffers of sentinel bytes, exact
 * placement of bytes) and the check that a test left nothing held, staging and host buffers included.
 * A subclass supplies the backend through {@link #builder()}.
 */
public abstract class CopyContractFixture {

	/** The chunk size of the suite's context: small, so that copies of a few hundred KiB cross many boundaries. */
	protected static final int CHUNK = 64 * 1024;

	static final byte SENTINEL = (byte) 0x5A;

	GpuContext context;

	/** The copy faults the context is opened with, which tests arm. */
	final CopyFaultInjection faults = new CopyFaultInjection();

	GpuLauncher launcher;

	private long memoryAtStart;

	/** A builder for the backend under test; the suite adds its pool sizes and chunk size. */
	protected abstract GpuContextBuilder builder();

	@BeforeEach
	void open() {
		this.context = this.faults.open(builder().poolSize(2).maxSize(8).acquireTimeout(Duration.ofSeconds(10))
			.kernelTiming(KernelTiming.OFF)
			.copyChunkSize(CHUNK)
			.copyThreads(2));
		this.launcher = this.context.launcher();
		this.memoryAtStart = this.context.memory().usedBytes();
	}

	@AfterEach
	void close() {
		if (this.context != null) {
			this.faults.clear();
			this.context.close();
		}
	}

	// ---- helpers -----------------------------------------------------------------------------------

	/** A device buffer of {@code bytes}, every byte {@link #SENTINEL}, ready on {@code stream}. */
	DeviceBuffer sentinels(long bytes, GpuStream stream) {
		DeviceBuffer buffer = this.launcher.callWithStream(stream, () -> this.launcher.allocate(bytes, ElementType.BYTE));
		buffer.fill(SENTINEL, stream);
		return buffer;
	}

	static byte[] bytesOf(DeviceBuffer buffer, GpuStream stream) {
		ByteBuffer all = ByteBuffer.allocate((int) buffer.byteSize());
		buffer.download(HostArray.of(all), 0, stream).join();
		return all.array();
	}

	static byte[] randomBytes(SplittableRandom random, int n) {
		byte[] bytes = new byte[n];
		random.nextBytes(bytes);
		return bytes;
	}

	/** Asserts {@code actual} holds {@code expected} at {@code at} and {@link #SENTINEL} everywhere else. */
	static void assertPlaced(byte[] actual, byte[] expected, int at, String what) {
		for (int i = 0; i < actual.length; i++) {
			byte want = (i >= at && i < at + expected.length) ? expected[i - at] : SENTINEL;
			if (actual[i] != want) {
				throw new AssertionError(what + ": byte " + i + " is " + actual[i] + ", expected " + want + " (data at " + at
						+ ".." + (at + expected.length) + " of " + actual.length + ")");
			}
		}
	}

	/**
	 * Nothing held: pool idle, no event in use, device memory back, no host buffer open and no staging
	 * held. Staging of a copy goes back when its stream has passed it, which the completion thread
	 * sees a moment after a synchronisation, so that part is awaited.
	 */
	void assertNothingHeld() {
		this.context.synchronizeDevice();
		PoolStats stats = this.context.streams().stats();
		assertThat(stats.active()).as("leased streams").isZero();
		assertThat(this.context.events().inUse()).as("events in use").isZero();
		assertThat(this.context.memory().usedBytes()).as("device memory in use").isEqualTo(this.memoryAtStart);
		HostMemoryInfo host = awaitHost(() -> this.context.hostMemory(),
				(info) -> info.stagingBytes() == 0 && info.hostBuffers() == 0);
		assertThat(host.hostBuffers()).as("host buffers held").isZero();
		assertThat(host.hostBufferBytes()).as("host buffer bytes held").isZero();
		assertThat(host.stagingBytes()).as("staging bytes held by copies").isZero();
	}

	static HostMemoryInfo awaitHost(Supplier<HostMemoryInfo> info, java.util.function.Predicate<HostMemoryInfo> done) {
		long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
		HostMemoryInfo last = info.get();
		while (!done.test(last) && System.nanoTime() < deadline) {
			try {
				Thread.sleep(5);
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
				break;
			}
			last = info.get();
		}
		return last;
	}

}
