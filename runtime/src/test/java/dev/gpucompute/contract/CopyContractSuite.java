package dev.gpucompute.contract;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Duration;
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
import java.util.function.Supplier;

import org.assertj.core.api.ThrowableAssert.ThrowingCallable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.EnumSource;

import dev.gpucompute.Backend;
import dev.gpucompute.ContextClosedException;
import dev.gpucompute.CopyFaultInjection;
import dev.gpucompute.DeviceBuffer;
import dev.gpucompute.Dim3;
import dev.gpucompute.ElementType;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuException;
import dev.gpucompute.GpuLauncher;
import dev.gpucompute.GpuStream;
import dev.gpucompute.HostArray;
import dev.gpucompute.HostBuffer;
import dev.gpucompute.HostMemoryInfo;
import dev.gpucompute.Kernel;
import dev.gpucompute.KernelTiming;
import dev.gpucompute.LaunchConfig;
import dev.gpucompute.PoolStats;
import dev.gpucompute.StreamLease;
import dev.gpucompute.cpu.CpuBackendProvider;
import dev.gpucompute.GpuContextBuilder;

/**
 * Host↔device copies on every backend (docs/runtime.md, "Copies between host and device"): array, buffer and host
 * buffer copies give exact bytes at every chunk boundary and offset, also concurrently on several
 * streams; a host buffer closed while its copy is pending keeps its memory until the copy ends; the
 * failure of one chunk fails its copy and leaves nothing held. Chunks are made small here (64 KiB),
 * so that every boundary case is cheap; the default chunk size gets a round trip too.
 */
public abstract class CopyContractSuite {

	/** The chunk size of the suite's context: small, so that copies of a few hundred KiB cross many boundaries. */
	protected static final int CHUNK = 64 * 1024;

	private static final LaunchConfig ONE = LaunchConfig.of(Dim3.of(1), Dim3.of(1));

	/** Long enough that a missed rendezvous is not a scheduling accident. */
	private static final int RENDEZVOUS_TIMEOUT_MS = 20_000;

	private static final byte SENTINEL = (byte) 0x5A;

	private GpuContext context;

	private GpuLauncher launcher;

	private long memoryAtStart;

	/** A builder for the backend under test; the suite adds its pool sizes and chunk size. */
	protected abstract GpuContextBuilder builder();

	@BeforeEach
	void open() {
		this.context = builder().poolSize(2).maxSize(8).acquireTimeout(Duration.ofSeconds(10))
			.kernelTiming(KernelTiming.OFF)
			.copyChunkSize(CHUNK)
			.copyThreads(2)
			.open();
		this.launcher = this.context.launcher();
		this.memoryAtStart = this.context.memory().usedBytes();
	}

	@AfterEach
	void close() {
		if (this.context != null) {
			CopyFaultInjection.clear(this.context);
			this.context.close();
		}
	}

	// ---- helpers -----------------------------------------------------------------------------------

	/** A device buffer of {@code bytes}, every byte {@link #SENTINEL}, ready on {@code stream}. */
	private DeviceBuffer sentinels(long bytes, GpuStream stream) {
		DeviceBuffer buffer = this.launcher.callWithStream(stream, () -> this.launcher.allocate(bytes, ElementType.BYTE));
		buffer.fill(SENTINEL, stream);
		return buffer;
	}

	private static byte[] bytesOf(DeviceBuffer buffer, GpuStream stream) {
		ByteBuffer all = ByteBuffer.allocate((int) buffer.byteSize());
		buffer.download(HostArray.of(all), 0, stream).join();
		return all.array();
	}

	private static byte[] randomBytes(SplittableRandom random, int n) {
		byte[] bytes = new byte[n];
		random.nextBytes(bytes);
		return bytes;
	}

	/** The bytes of {@code values} as the device holds them (native order). */
	private static byte[] nativeBytes(float[] values) {
		ByteBuffer buffer = ByteBuffer.allocate(values.length * Float.BYTES).order(ByteOrder.nativeOrder());
		buffer.asFloatBuffer().put(values);
		return buffer.array();
	}

	/** Asserts {@code actual} holds {@code expected} at {@code at} and {@link #SENTINEL} everywhere else. */
	private static void assertPlaced(byte[] actual, byte[] expected, int at, String what) {
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
	private void assertNothingHeld() {
		this.context.synchronize();
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

	private static HostMemoryInfo awaitHost(Supplier<HostMemoryInfo> info, java.util.function.Predicate<HostMemoryInfo> done) {
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

	/** Holds {@code stream} in a kernel until {@link Gate#open} runs its partner on another stream. */
	private final class Gate implements AutoCloseable {

		private final StreamLease other = CopyContractSuite.this.context.streams().acquire();

		private final DeviceBuffer flags;

		private final DeviceBuffer seen;

		private final Kernel rendezvous = CopyContractSuite.this.launcher.load(ContractKernels.RENDEZVOUS);

		private boolean opened;

		Gate(GpuStream stream) {
			// Owned by the other stream: a first use there would otherwise wait for the gated kernel.
			this.flags = sentinels(8, this.other.stream());
			this.flags.fill((byte) 0, this.other.stream());
			this.seen = sentinels(8, this.other.stream());
			CopyContractSuite.this.launcher.launch(stream, this.rendezvous, ONE, 0, 1, this.flags, this.seen,
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
				CopyContractSuite.this.launcher.launch(this.other.stream(), this.rendezvous, ONE, 1, 0, this.flags, this.seen,
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
	void floatCopiesAreExactAtEveryChunkBoundaryAndOffset() {
		int perChunk = CHUNK / Float.BYTES;
		int[] sizes = { 1, perChunk - 1, perChunk, perChunk + 1, 2 * perChunk - 1, 2 * perChunk, 2 * perChunk + 1,
				3 * perChunk + 7, 10 * perChunk + 3 };
		int[] offsets = { 0, 1, perChunk - 1, perChunk + 3 };
		SplittableRandom random = new SplittableRandom(27);
		try (StreamLease lease = this.context.streams().acquire()) {
			GpuStream stream = lease.stream();
			for (int n : sizes) {
				for (int offset : offsets) {
					float[] data = new float[n];
					for (int i = 0; i < n; i++) {
						data[i] = Float.intBitsToFloat(random.nextInt()); // every bit pattern, NaN payloads included
					}
					int guard = 16;
					try (DeviceBuffer device = sentinels(4L * (offset + n + guard), stream)) {
						device.upload(HostArray.of(data), offset, stream).join();
						String what = n + " floats at element " + offset;
						assertPlaced(bytesOf(device, stream), nativeBytes(data), 4 * offset, what);
						float[] back = new float[offset + n];
						device.download(HostArray.of(back), stream).join();
						for (int i = 0; i < n; i++) {
							if (Float.floatToRawIntBits(back[offset + i]) != Float.floatToRawIntBits(data[i])) {
								throw new AssertionError(what + ": element " + i + " came back as " + back[offset + i]);
							}
						}
					}
				}
			}
		}
		assertNothingHeld();
	}

	@Test
	void intLongAndDoubleArraysRoundTripAcrossChunks() {
		SplittableRandom random = new SplittableRandom(28);
		int[] ints = random.ints(5 * CHUNK / Integer.BYTES / 2 + 3).toArray();
		long[] longs = random.longs(3 * CHUNK / Long.BYTES + 1).toArray();
		double[] doubles = random.doubles(2 * CHUNK / Double.BYTES - 1).toArray();
		try (StreamLease lease = this.context.streams().acquire()) {
			GpuStream stream = lease.stream();
			try (DeviceBuffer device = sentinels(8L * longs.length, stream)) {
				device.upload(HostArray.of(ints), stream).join();
				int[] intsBack = new int[ints.length];
				device.download(HostArray.of(intsBack), stream).join();
				assertThat(intsBack).isEqualTo(ints);
				device.upload(HostArray.of(longs), stream).join();
				long[] longsBack = new long[longs.length];
				device.download(HostArray.of(longsBack), stream).join();
				assertThat(longsBack).isEqualTo(longs);
				device.upload(HostArray.of(doubles), stream).join();
				double[] doublesBack = new double[doubles.length];
				device.download(HostArray.of(doublesBack), stream).join();
				assertThat(doublesBack).isEqualTo(doubles);
			}
		}
		assertNothingHeld();
	}

	/**
	 * A {@link HostArray} of part of an array copies exactly that part: an upload reads nothing outside
	 * it, a download and a {@code get} write nothing outside it, across chunk boundaries and at an element
	 * offset of the device buffer, for every element type.
	 */
	@ParameterizedTest
	@EnumSource(ElementType.class)
	void arrayRangesCopyOnlyTheirElementsAcrossChunks(ElementType type) {
		int size = type.bytes();
		int length = (2 * CHUNK + 3 * size + 1) / size; // crosses two chunk boundaries
		int from = 5;
		int total = from + length + 4;
		int deviceOffset = 3; // elements
		SplittableRandom random = new SplittableRandom(31 + type.ordinal());
		byte[] sourceBytes = randomBytes(random, total * size);
		byte[] rangeBytes = java.util.Arrays.copyOfRange(sourceBytes, from * size, (from + length) * size);
		String what = length + " " + type + " elements from index " + from;
		try (StreamLease lease = this.context.streams().acquire(); HostBuffer host = this.context.allocateHost(total * size)) {
			GpuStream stream = lease.stream();
			try (DeviceBuffer device = sentinels((long) (deviceOffset + length + 2) * size, stream)) {
				Object source = arrayOf(type, sourceBytes);
				device.upload(range(source, from, length), deviceOffset, stream).join();
				assertPlaced(bytesOf(device, stream), rangeBytes, deviceOffset * size, what);

				byte[] targetBytes = randomBytes(random, total * size);
				Object target = arrayOf(type, targetBytes);
				int to = 7;
				device.download(range(target, to, length), deviceOffset, stream).join();
				byte[] expected = targetBytes.clone();
				System.arraycopy(rangeBytes, 0, expected, to * size, rangeBytes.length);
				assertThat(bytesOf(target, type)).as(what + ", downloaded to index " + to).isEqualTo(expected);
			}
			// The same through a host buffer: put writes only the range's bytes, get fills only its elements.
			byte[] hostBefore = randomBytes(random, total * size);
			host.put(0, HostArray.of(hostBefore));
			host.put(2L * size, range(arrayOf(type, sourceBytes), from, length));
			byte[] hostExpected = hostBefore.clone();
			System.arraycopy(rangeBytes, 0, hostExpected, 2 * size, rangeBytes.length);
			byte[] hostNow = new byte[total * size];
			host.get(0, HostArray.of(hostNow));
			assertThat(hostNow).as(what + ", put into a host buffer at element 2").isEqualTo(hostExpected);
			byte[] targetBytes = randomBytes(random, total * size);
			Object target = arrayOf(type, targetBytes);
			host.get(2L * size, range(target, 1, length));
			byte[] expected = targetBytes.clone();
			System.arraycopy(rangeBytes, 0, expected, size, rangeBytes.length);
			assertThat(bytesOf(target, type)).as(what + ", read back from a host buffer to index 1").isEqualTo(expected);
		}
		assertNothingHeld();
	}

	/** An array of {@code type} holding {@code raw}'s bytes in native order. */
	private static Object arrayOf(ElementType type, byte[] raw) {
		ByteBuffer bytes = ByteBuffer.wrap(raw).order(ByteOrder.nativeOrder());
		int n = raw.length / type.bytes();
		return switch (type) {
			case FLOAT -> {
				float[] array = new float[n];
				bytes.asFloatBuffer().get(array);
				yield array;
			}
			case INT -> {
				int[] array = new int[n];
				bytes.asIntBuffer().get(array);
				yield array;
			}
			case LONG -> {
				long[] array = new long[n];
				bytes.asLongBuffer().get(array);
				yield array;
			}
			case DOUBLE -> {
				double[] array = new double[n];
				bytes.asDoubleBuffer().get(array);
				yield array;
			}
			case BYTE -> raw.clone();
		};
	}

	/** The native-order bytes of an array made by {@link #arrayOf}. */
	private static byte[] bytesOf(Object array, ElementType type) {
		int n = java.lang.reflect.Array.getLength(array);
		ByteBuffer bytes = ByteBuffer.allocate(n * type.bytes()).order(ByteOrder.nativeOrder());
		switch (type) {
			case FLOAT -> bytes.asFloatBuffer().put((float[]) array);
			case INT -> bytes.asIntBuffer().put((int[]) array);
			case LONG -> bytes.asLongBuffer().put((long[]) array);
			case DOUBLE -> bytes.asDoubleBuffer().put((double[]) array);
			case BYTE -> bytes.put((byte[]) array);
		}
		return bytes.array();
	}

	/** {@code HostArray.of(array, from, length)} for an array of any element type. */
	private static HostArray range(Object array, int from, int length) {
		if (array instanceof float[] floats) {
			return HostArray.of(floats, from, length);
		}
		if (array instanceof int[] ints) {
			return HostArray.of(ints, from, length);
		}
		if (array instanceof long[] longs) {
			return HostArray.of(longs, from, length);
		}
		if (array instanceof double[] doubles) {
			return HostArray.of(doubles, from, length);
		}
		return HostArray.of((byte[]) array, from, length);
	}

	@Test
	void byteBufferCopiesAreExactAtEveryChunkBoundaryAndOffset() {
		int[] sizes = { 1, CHUNK - 1, CHUNK, CHUNK + 1, 3 * CHUNK + 5 };
		int[] deviceOffsets = { 0, 1, CHUNK - 1 };
		SplittableRandom random = new SplittableRandom(29);
		try (StreamLease lease = this.context.streams().acquire()) {
			GpuStream stream = lease.stream();
			for (boolean direct : new boolean[] { false, true }) {
				for (int n : sizes) {
					for (int offset : deviceOffsets) {
						String what = n + " bytes from a " + (direct ? "direct" : "heap") + " buffer at device offset " + offset;
						byte[] data = randomBytes(random, n);
						int position = 3;
						ByteBuffer source = direct ? ByteBuffer.allocateDirect(position + n + 5) : ByteBuffer.allocate(position + n + 5);
						source.position(position);
						source.put(data);
						source.position(position).limit(position + n);
						try (DeviceBuffer device = sentinels(offset + n + 7, stream)) {
							device.upload(HostArray.of(source), offset, stream).join();
							assertThat(source.position()).as("source position").isEqualTo(position);
							assertPlaced(bytesOf(device, stream), data, offset, what);
							ByteBuffer target = direct ? ByteBuffer.allocateDirect(n + 9) : ByteBuffer.allocate(n + 9);
							for (int i = 0; i < target.capacity(); i++) {
								target.put(i, SENTINEL);
							}
							target.position(4).limit(4 + n);
							device.download(HostArray.of(target), offset, stream).join();
							assertThat(target.position()).as("destination position").isEqualTo(4);
							byte[] back = new byte[target.capacity()];
							target.clear().get(back);
							assertPlaced(back, data, 4, what + ", downloaded");
						}
					}
				}
			}
		}
		assertNothingHeld();
	}

	/**
	 * A {@code ByteBuffer}'s region is fixed when its HostArray is made; a limit lowered below the
	 * region's end afterwards fails the copies that use it, and holds nothing.
	 */
	@Test
	void aByteBufferLimitLoweredBelowItsRegionFailsItsCopies() {
		try (StreamLease lease = this.context.streams().acquire(); DeviceBuffer device = sentinels(64, lease.stream())) {
			GpuStream stream = lease.stream();
			ByteBuffer source = ByteBuffer.allocate(32);
			HostArray from = HostArray.of(source);
			source.position(30); // the position may move: the region does not
			device.upload(from, stream).join();
			source.limit(16);
			assertThatThrownBy(() -> device.upload(from, stream).join()).isInstanceOf(IndexOutOfBoundsException.class);
			ByteBuffer target = ByteBuffer.allocate(32);
			HostArray into = HostArray.of(target);
			target.limit(16);
			assertThatThrownBy(() -> device.download(into, stream).join()).isInstanceOf(CompletionException.class)
				.hasRootCauseInstanceOf(IndexOutOfBoundsException.class);
			stream.synchronize();
		}
		assertNothingHeld();
	}

	@Test
	void hostBufferCopiesAreExactWithOffsets() {
		SplittableRandom random = new SplittableRandom(30);
		int size = 3 * CHUNK + 100;
		byte[] data = randomBytes(random, size);
		long[][] ranges = { { 0, 0, size }, { 1, 0, CHUNK }, { CHUNK - 1, 3, CHUNK + 2 }, { 17, CHUNK + 1, 1 },
				{ 2 * CHUNK, 5, CHUNK + 99 } };
		try (StreamLease lease = this.context.streams().acquire(); HostBuffer source = this.context.allocateHost(size);
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

	// ---- concurrency -----------------------------------------------------------------------------------

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
			small.synchronize();
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
								HostBuffer host = this.context.allocateHost(4L * n)) {
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

	// ---- host buffers and pending copies ---------------------------------------------------------------

	@Test
	void hostBufferClosedWhileItsUploadIsPendingKeepsItsMemoryUntilTheUploadEnds() {
		SplittableRandom random = new SplittableRandom(31);
		int size = 2 * CHUNK + 40;
		byte[] original = randomBytes(random, size);
		try (StreamLease lease = this.context.streams().acquire()) {
			GpuStream stream = lease.stream();
			try (DeviceBuffer device = sentinels(size, stream); Gate gate = new Gate(stream)) {
				HostBuffer host = this.context.allocateHost(size);
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
				try (HostBuffer other = this.context.allocateHost(size)) {
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
		long block;
		long pendingCached;
		try (StreamLease lease = this.context.streams().acquire()) {
			GpuStream stream = lease.stream();
			try (DeviceBuffer device = sentinels(size, stream); Gate gate = new Gate(stream)) {
				HostBuffer host = this.context.allocateHost(size);
				host.put(0, HostArray.of(original));
				HostMemoryInfo open = this.context.hostMemory();
				block = open.hostBufferBytes();
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
				pendingCached = pending.cachedBytes();
				gate.open();
				upload.join();
				assertThat(gate.held()).as("the upload was held by the gate, not by its timeout").isTrue();
				assertPlaced(bytesOf(device, stream), original, 0, "upload from a host buffer closed while pending");
			}
		}
		// Once the copy has ended: back in the pool exactly once, nothing held.
		HostMemoryInfo after = awaitHost(this.context::hostMemory, (info) -> info.hostBuffers() == 0);
		assertThat(after.hostBufferBytes()).isZero();
		assertThat(after.cachedBytes()).as("the block went back to the pool")
			.isGreaterThanOrEqualTo(pendingCached + block);
		assertNothingHeld();
	}

	@Test
	void hostBufferClosedWhileADownloadIntoItIsPendingIsReleasedAfterIt() {
		try (StreamLease lease = this.context.streams().acquire()) {
			GpuStream stream = lease.stream();
			try (DeviceBuffer device = sentinels(3 * CHUNK, stream); Gate gate = new Gate(stream)) {
				HostBuffer host = this.context.allocateHost(3 * CHUNK);
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
		try (StreamLease lease = this.context.streams().acquire(); HostBuffer host = this.context.allocateHost(4 * CHUNK)) {
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
		HostBuffer host = other.allocateHost(CHUNK);
		host.put(0, HostArray.of(new byte[] { 1, 2, 3 }));
		other.close();
		assertThatThrownBy(() -> host.put(0, HostArray.of(new byte[1]))).isInstanceOf(ContextClosedException.class);
		assertThatThrownBy(host::asByteBuffer).isInstanceOf(ContextClosedException.class);
		host.close();
		if (other.backend() == Backend.CPU) {
			assertThat(CpuBackendProvider.heldBytes()).as("off-heap memory of the CPU backend").isEqualTo(heldBefore);
		}
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
				AtomicInteger failures = CopyFaultInjection.failAt(this.context, step, chunk);
				assertThatThrownBy(() -> device.upload(HostArray.of(data), stream)).isInstanceOf(GpuException.class)
					.hasMessageContaining(CopyFaultInjection.MESSAGE + ": " + step + " of chunk " + chunk);
				assertThat(failures.get()).isEqualTo(1);
				CopyFaultInjection.clear(this.context);
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
				CopyFaultInjection.failAt(this.context, step, chunk);
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
				CopyFaultInjection.clear(this.context);
				device.download(HostArray.of(back), stream).join();
				assertThat(back).containsOnly(7f);
			}
		}
		assertNothingHeld();
	}

	@ParameterizedTest(name = "{0}")
	@CsvSource({ "upload", "download" })
	void aHostBufferCopyThatCannotBeEnqueuedLeavesNothingPendingOnIt(String direction) {
		try (StreamLease lease = this.context.streams().acquire(); HostBuffer host = this.context.allocateHost(CHUNK)) {
			GpuStream stream = lease.stream();
			try (DeviceBuffer device = sentinels(CHUNK, stream)) {
				CopyFaultInjection.failAt(this.context, "COPY", 0);
				assertThatThrownBy(() -> {
					if (direction.equals("upload")) {
						device.upload(host, stream);
					}
					else {
						device.download(host, stream);
					}
				}).isInstanceOf(GpuException.class).hasMessageContaining(CopyFaultInjection.MESSAGE);
				CopyFaultInjection.clear(this.context);
				host.put(0, HostArray.of(new byte[CHUNK])); // refused if the failed copy were still registered as pending
				host.get(0, HostArray.of(new byte[CHUNK]));
			}
		}
		assertNothingHeld();
	}

}
