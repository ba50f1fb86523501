package dev.gpucompute.cuda;

import static dev.gpucompute.ParamType.BUFFER;
import static dev.gpucompute.ParamType.DOUBLE;
import static dev.gpucompute.ParamType.FLOAT;
import static dev.gpucompute.ParamType.INT;
import static dev.gpucompute.ParamType.LONG;
import static dev.gpucompute.cuda.CudaTestSupport.TEST_KERNELS_PTX;
import static dev.gpucompute.cuda.CudaTestSupport.args;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.lang.reflect.Method;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Stream;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import dev.gpucompute.Backend;
import dev.gpucompute.ContextClosedException;
import dev.gpucompute.DefaultStreamMode;
import dev.gpucompute.DeviceInfo;
import dev.gpucompute.Dim3;
import dev.gpucompute.GpuException;
import dev.gpucompute.KernelCompilationException;
import dev.gpucompute.KernelSource;
import dev.gpucompute.LaunchConfig;
import dev.gpucompute.MemoryInfo;
import dev.gpucompute.StreamPriority;
import dev.gpucompute.spi.BackendConfig;
import dev.gpucompute.spi.KernelCompilation;
import dev.gpucompute.spi.NativeEvent;
import dev.gpucompute.spi.NativeKernel;
import dev.gpucompute.spi.NativeMemory;
import dev.gpucompute.spi.NativeStream;

/**
 * The CUDA backend against a real device, directly through the SPI. Skipped with the probe's
 * reason without a device; failed instead when {@code GPU_REQUIRED=1}. The sticky-error test lives
 * in {@link CudaStickyErrorGpuTest}, in its own process, because an illegal address poisons the
 * primary context for the rest of the JVM.
 */
@Tag("gpu")
@ExtendWith(CudaTestSupport.RequiresCuda.class)
class CudaBackendGpuTest {

	private static final String SAXPY_SOURCE = """
			extern "C" __global__ void saxpy(int n, float a, const float* x, float* y) {
			  int i = blockIdx.x * blockDim.x + threadIdx.x;
			  if (i < n) y[i] = a * x[i] + y[i];
			}
			""";

	private static final KernelSource SAXPY_PTX = KernelSource.named("saxpy")
		.params(INT, FLOAT, BUFFER, BUFFER)
		.cudaResource(TEST_KERNELS_PTX);

	private static final KernelSource RENDEZVOUS = KernelSource.named("rendezvous")
		.params(BUFFER, BUFFER, INT, INT, LONG)
		.cudaResource(TEST_KERNELS_PTX);

	private static final KernelSource SLEEP_THEN_WRITE = KernelSource.named("sleep_then_write")
		.params(LONG, BUFFER, INT)
		.cudaResource(TEST_KERNELS_PTX);

	private static final KernelSource SCALE_MIXED = KernelSource.named("scale_mixed")
		.params(LONG, DOUBLE, BUFFER, BUFFER, BUFFER)
		.cudaResource(TEST_KERNELS_PTX);

	private static final KernelSource STORE_I64 = KernelSource.named("store_i64")
		.params(LONG, BUFFER)
		.cudaResource(TEST_KERNELS_PTX);

	private static final KernelSource SHARED_REVERSE = KernelSource.named("shared_reverse")
		.params(INT, BUFFER, BUFFER)
		.cudaResource(TEST_KERNELS_PTX);

	private static final LaunchConfig ONE_THREAD = LaunchConfig.of(Dim3.of(1), Dim3.of(1));

	private static CudaDeviceBackend backend;

	private NativeStream stream;

	private MemoryInfo memoryAtStart;

	@BeforeAll
	static void openBackend() {
		if (CudaTestSupport.availability().available()) {
			backend = CudaTestSupport.open(null);
		}
	}

	@AfterAll
	static void closeBackend() {
		if (backend != null) {
			backend.close();
		}
	}

	@BeforeEach
	void createStream() {
		this.memoryAtStart = backend.memoryInfo();
		this.stream = backend.createStream(StreamPriority.NORMAL, "test");
	}

	@AfterEach
	void destroyStream() {
		this.stream.synchronize();
		this.stream.destroy();
		MemoryInfo now = backend.memoryInfo();
		assertThat(now.liveBuffers()).as("buffers leaked by the test").isEqualTo(this.memoryAtStart.liveBuffers());
		assertThat(now.usedBytes()).isEqualTo(this.memoryAtStart.usedBytes());
		assertThat(backend.healthProblem()).isNull();
	}

	@Test
	void deviceInfoIsFilledIn() {
		DeviceInfo info = backend.info();
		assertThat(info.backend()).isEqualTo(Backend.CUDA);
		assertThat(info.name()).isNotBlank();
		assertThat(info.uuid()).matches("GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}");
		assertThat(info.pciBusId()).matches("[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\\.[0-9A-Fa-f]");
		assertThat(info.computeCapability()).matches("\\d+\\.\\d+");
		assertThat(info.driverVersion()).matches("\\d+\\.\\d");
		assertThat(info.multiprocessors()).isPositive();
		assertThat(info.totalMemoryBytes()).isGreaterThan(1L << 30);
		assertThat(info.maxThreadsPerBlock()).isGreaterThanOrEqualTo(1024);
		assertThat(info.maxBlockDim().x()).isGreaterThanOrEqualTo(1024);
		assertThat(info.maxGridDim().x()).isEqualTo(Integer.MAX_VALUE);
		assertThat(info.maxSharedMemoryPerBlock()).isGreaterThanOrEqualTo(48 * 1024);
		assertThat(info.warpSize()).isEqualTo(32);
		assertThat(CudaTestSupport.availability().reason()).contains(info.name());
	}

	@Test
	void saxpyOver16MFloatsFromCudaCMatchesTheCpu() {
		NativeKernel saxpy = CudaTestSupport.loadCudaC(backend,
				KernelSource.named("saxpy").params(INT, FLOAT, BUFFER, BUFFER).cuda(SAXPY_SOURCE));
		runSaxpy(saxpy, 16 << 20);
	}

	@Test
	void ptxProducedByNvccRunsSaxpy() {
		runSaxpy(backend.loadKernel(SAXPY_PTX), 1 << 20);
	}

	private void runSaxpy(NativeKernel saxpy, int n) {
		long bytes = 4L * n;
		float a = 2.5f;
		ByteBuffer hostX = backend.allocateStaging(bytes);
		ByteBuffer hostY = backend.allocateStaging(bytes);
		float[] expected = new float[n];
		try {
			FloatBuffer x = hostX.asFloatBuffer();
			FloatBuffer y = hostY.asFloatBuffer();
			for (int i = 0; i < n; i++) {
				float xi = (i % 1000) * 0.25f - 7f;
				float yi = (i % 7) + 1f;
				x.put(i, xi);
				y.put(i, yi);
				expected[i] = a * xi + yi;
			}
			NativeMemory dx = backend.allocate(bytes, this.stream);
			NativeMemory dy = backend.allocate(bytes, this.stream);
			backend.copyToDevice(hostX, dx, 0, bytes, this.stream);
			backend.copyToDevice(hostY, dy, 0, bytes, this.stream);
			backend.launch(saxpy, LaunchConfig.linear(n, 256), args(n, a, dx, dy), this.stream);
			backend.fill(dx, 0, bytes, (byte) 0, this.stream); // after the kernel, in stream order
			backend.copyToHost(dy, 0, hostY, bytes, this.stream);
			backend.free(dx, this.stream);
			backend.free(dy, this.stream);
			this.stream.synchronize();
			for (int i = 0; i < n; i++) {
				float got = y.get(i);
				// The device may fuse a*x+y into one FMA: allow an ulp or two.
				if (Math.abs(got - expected[i]) > 2 * Math.ulp(expected[i])) {
					throw new AssertionError("y[" + i + "] = " + got + ", expected " + expected[i]);
				}
			}
		}
		finally {
			backend.freeStaging(hostX);
			backend.freeStaging(hostY);
		}
	}

	@Test
	void eightByteParametersArePackedCorrectly() {
		NativeKernel scale = backend.loadKernel(SCALE_MIXED);
		int n = 1000;
		ByteBuffer host = backend.allocateStaging(8L * n);
		ByteBuffer count = backend.allocateStaging(4);
		try {
			for (int i = 0; i < n; i++) {
				host.putDouble(8 * i, i + 0.5);
			}
			NativeMemory in = backend.allocate(8L * n, this.stream);
			NativeMemory out = backend.allocate(8L * n, this.stream);
			NativeMemory counter = backend.allocate(4, this.stream);
			backend.fill(counter, 0, 4, (byte) 0, this.stream);
			backend.copyToDevice(host, in, 0, 8L * n, this.stream);
			backend.launch(scale, LaunchConfig.linear(n, 128), args((long) n, -3.0, in, out, counter), this.stream);
			backend.copyToHost(out, 0, host, 8L * n, this.stream);
			backend.copyToHost(counter, 0, count, 4, this.stream);
			backend.free(in, this.stream);
			backend.free(out, this.stream);
			backend.free(counter, this.stream);
			this.stream.synchronize();
			for (int i = 0; i < n; i++) {
				assertThat(host.getDouble(8 * i)).isEqualTo((i + 0.5) * -3.0);
			}
			assertThat(count.getInt(0)).isEqualTo(n);
		}
		finally {
			backend.freeStaging(host);
			backend.freeStaging(count);
		}
	}

	/**
	 * Two kernels on two streams each announce themselves and wait (bounded) for the other: both
	 * see each other only if they ran at the same time. Proven by the flags on the device, not by a
	 * stopwatch.
	 */
	@Test
	void kernelsOnTwoStreamsOverlap() {
		NativeKernel rendezvous = backend.loadKernel(RENDEZVOUS);
		NativeStream other = backend.createStream(StreamPriority.HIGH, "test-other");
		NativeEvent ready = backend.createEvent(false);
		ByteBuffer host = backend.allocateStaging(16);
		try {
			NativeMemory flags = backend.allocate(8, this.stream);
			NativeMemory seen = backend.allocate(8, this.stream);
			backend.fill(flags, 0, 8, (byte) 0, this.stream);
			backend.fill(seen, 0, 8, (byte) 0, this.stream);
			ready.record(this.stream);
			other.waitEvent(ready);
			long timeoutNanos = TimeUnit.SECONDS.toNanos(10);
			backend.launch(rendezvous, ONE_THREAD, args(flags, seen, 0, 1, timeoutNanos), this.stream);
			backend.launch(rendezvous, ONE_THREAD, args(flags, seen, 1, 0, timeoutNanos), other);
			other.synchronize();
			this.stream.synchronize();
			backend.copyToHost(flags, 0, host, 8, this.stream);
			host.position(8);
			backend.copyToHost(seen, 0, host, 8, this.stream);
			host.position(0);
			backend.free(flags, this.stream);
			backend.free(seen, this.stream);
			this.stream.synchronize();
			assertThat(new int[] { host.getInt(0), host.getInt(4) }).as("flags").containsExactly(1, 1);
			assertThat(new int[] { host.getInt(8), host.getInt(12) }).as("each kernel saw the other").containsExactly(1, 1);
		}
		finally {
			backend.freeStaging(host);
			ready.destroy();
			other.destroy();
		}
	}

	@Test
	void timingEventsMeasureDeviceTime() {
		NativeKernel sleep = backend.loadKernel(SLEEP_THEN_WRITE);
		NativeEvent start = backend.createEvent(true);
		NativeEvent stop = backend.createEvent(true);
		NativeEvent plain = backend.createEvent(false);
		try {
			NativeMemory out = backend.allocate(4, this.stream);
			start.record(this.stream);
			backend.launch(sleep, ONE_THREAD, args(TimeUnit.MILLISECONDS.toNanos(100), out, 1), this.stream);
			stop.record(this.stream);
			plain.record(this.stream);
			backend.free(out, this.stream);
			stop.synchronize();
			assertThat(stop.query()).isTrue();
			assertThat(stop.elapsedMillisSince(start)).isBetween(95f, 10_000f);
			assertThatThrownBy(() -> plain.elapsedMillisSince(start)).isInstanceOf(GpuException.class)
				.hasMessageContaining("timing");
		}
		finally {
			start.destroy();
			stop.destroy();
			plain.destroy();
		}
	}

	@Test
	void anEventNeverRecordedIsComplete() {
		NativeEvent event = backend.createEvent(false);
		try {
			assertThat(event.query()).isTrue();
			event.synchronize();
		}
		finally {
			event.destroy();
		}
	}

	/**
	 * Synchronising a default stream really waits: the kernel sleeps 300 ms, so an event recorded
	 * after it is complete right after synchronize() only if synchronize() waited for it.
	 */
	@ParameterizedTest
	@EnumSource(DefaultStreamMode.class)
	void synchronizingTheDefaultStreamReallyWaits(DefaultStreamMode mode) {
		NativeStream defaultStream = backend.defaultStream(mode);
		NativeKernel sleep = backend.loadKernel(SLEEP_THEN_WRITE);
		NativeEvent after = backend.createEvent(false);
		ByteBuffer host = backend.allocateStaging(4);
		try {
			NativeMemory out = backend.allocate(4, defaultStream);
			backend.fill(out, 0, 4, (byte) 0, defaultStream);
			backend.launch(sleep, ONE_THREAD, args(TimeUnit.MILLISECONDS.toNanos(300), out, 42), defaultStream);
			after.record(defaultStream);
			assertThat(after.query()).as("the kernel is still sleeping").isFalse();
			defaultStream.synchronize();
			assertThat(after.query()).as("complete right after synchronize()").isTrue();
			assertThat(defaultStream.query()).isTrue();
			backend.copyToHost(out, 0, host, 4, defaultStream);
			backend.free(out, defaultStream);
			defaultStream.synchronize();
			assertThat(host.getInt(0)).isEqualTo(42);
		}
		finally {
			backend.freeStaging(host);
			after.destroy();
		}
	}

	@Test
	void defaultStreamsAreOnePerModeAndThreadAndCannotBeDestroyed() throws Exception {
		assertThat(backend.defaultStream(DefaultStreamMode.LEGACY)).isSameAs(backend.defaultStream(DefaultStreamMode.LEGACY));
		NativeStream mine = backend.defaultStream(DefaultStreamMode.PER_THREAD);
		assertThat(backend.defaultStream(DefaultStreamMode.PER_THREAD)).isSameAs(mine);
		AtomicReference<NativeStream> theirs = new AtomicReference<>();
		Thread thread = new Thread(() -> theirs.set(backend.defaultStream(DefaultStreamMode.PER_THREAD)));
		thread.start();
		thread.join();
		assertThat(theirs.get()).isNotSameAs(mine);
		mine.destroy(); // a no-op
		mine.synchronize();
	}

	@Test
	void whenDoneRunsAfterTheWorkWithoutAFailure() throws Exception {
		NativeKernel sleep = backend.loadKernel(SLEEP_THEN_WRITE);
		NativeEvent after = backend.createEvent(false);
		CountDownLatch done = new CountDownLatch(1);
		AtomicReference<Object> failure = new AtomicReference<>("not called");
		try {
			NativeMemory out = backend.allocate(4, this.stream);
			backend.launch(sleep, ONE_THREAD, args(TimeUnit.MILLISECONDS.toNanos(50), out, 1), this.stream);
			after.record(this.stream);
			this.stream.whenDone((ex) -> {
				failure.set(ex);
				done.countDown();
			});
			backend.free(out, this.stream);
			assertThat(done.await(30, TimeUnit.SECONDS)).isTrue();
			assertThat(failure.get()).isNull();
			assertThat(after.query()).as("the callback came after the work").isTrue();
		}
		finally {
			after.destroy();
		}
	}

	@Test
	void copiesBetweenBuffersAndFillsHonourOffsets() {
		ByteBuffer host = backend.allocateStaging(64);
		try {
			assertThat(host.order()).isEqualTo(ByteOrder.nativeOrder());
			assertThat(host.isDirect()).isTrue();
			NativeMemory a = backend.allocate(64, this.stream);
			NativeMemory b = backend.allocate(64, this.stream);
			backend.fill(a, 0, 64, (byte) 1, this.stream);
			backend.fill(a, 16, 16, (byte) 7, this.stream);
			backend.fill(b, 0, 64, (byte) 0, this.stream);
			backend.copyDeviceToDevice(a, 8, b, 32, 24, this.stream);
			backend.copyToHost(b, 0, host, 64, this.stream);
			backend.free(a, this.stream);
			backend.free(b, this.stream);
			this.stream.synchronize();
			for (int i = 0; i < 64; i++) {
				int source = i - 32 + 8; // b[32..56) came from a[8..32)
				int expected = (i < 32 || i >= 56) ? 0 : ((source >= 16 && source < 32) ? 7 : 1);
				assertThat(host.get(i)).as("byte %d", i).isEqualTo((byte) expected);
			}
		}
		finally {
			backend.freeStaging(host);
		}
	}

	/**
	 * What {@code memoryInfo} guarantees (issue 29, item 4). This backend's own figures (bytes used, live
	 * buffers, cached bytes) are exact. The driver's free memory is device-wide and follows CUDA's
	 * stream-ordered pool, which gives memory back at synchronisations, lazily and in its own
	 * granularity, and serves an allocation from memory it still holds without any change in that
	 * figure: on the first GPU run a 16 MiB allocation left it unchanged ("0 >= 16777216") right after
	 * the pool had returned a 256 MiB block, and moved it on a rerun. So the driver's figure is checked
	 * where it must move whatever the pool keeps: a large block given back, after a free above the
	 * release threshold or when the cache is released, raises it by about the block (allowed a few
	 * synchronisations to settle), and a cached block is held from the driver until it is released.
	 * The figures of each step are printed for the GPU run's log.
	 */
	@Test
	void memoryInfoCountsThisBackendsBuffersAndTheDriversFiguresMove() throws InterruptedException {
		long big = 256L << 20; // far above what the pool was seen to keep, and above this backend's 64 MiB threshold
		long slack = 2L << 20;
		NativeStream legacy = backend.defaultStream(DefaultStreamMode.LEGACY);
		backend.releaseCachedMemory();
		legacy.synchronize();
		MemoryInfo before = backend.memoryInfo();
		NativeMemory buffer = backend.allocate(big, this.stream);
		this.stream.synchronize();
		MemoryInfo during = backend.memoryInfo();
		assertThat(during.usedBytes() - before.usedBytes()).isEqualTo(big);
		assertThat(during.liveBuffers() - before.liveBuffers()).isEqualTo(1);
		assertThat(during.totalBytes()).isEqualTo(backend.info().totalMemoryBytes());
		backend.free(buffer, this.stream);
		backend.free(buffer, this.stream); // a second free is a no-op
		MemoryInfo after = settled(backend, this.stream, during.freeBytes() + big - slack);
		assertThat(after.liveBuffers()).isEqualTo(before.liveBuffers());
		assertThat(after.usedBytes()).isEqualTo(before.usedBytes());
		assertThat(after.cachedBytes()).as("over the threshold: given back").isEqualTo(before.cachedBytes());
		assertThat(after.freeBytes() - during.freeBytes()).as("the driver got the 256 MiB buffer back")
			.isGreaterThanOrEqualTo(big - slack);
		System.out.printf("memoryInfo (CUDA): free before %d, holding 256 MiB %+d, after its free %+d bytes%n",
				before.freeBytes(), during.freeBytes() - before.freeBytes(), after.freeBytes() - before.freeBytes());

		// The same size cached: a backend whose threshold keeps it.
		try (CudaDeviceBackend caching = (CudaDeviceBackend) new CudaBackendProvider()
			.open(new BackendConfig(0, 1, 0, 2 * big, java.util.List.of(), null))) {
			NativeStream stream = caching.createStream(StreamPriority.NORMAL, "caching");
			NativeStream ownLegacy = caching.defaultStream(DefaultStreamMode.LEGACY);
			NativeMemory block = caching.allocate(big, stream);
			caching.free(block, stream);
			stream.synchronize();
			MemoryInfo cached = caching.memoryInfo();
			assertThat(cached.cachedBytes()).isEqualTo(big);
			assertThat(cached.usedBytes()).isZero();
			assertThat(cached.liveBuffers()).isZero();
			assertThat(caching.releaseCachedMemory()).isEqualTo(big);
			MemoryInfo released = settled(caching, ownLegacy, cached.freeBytes() + big - slack);
			assertThat(released.cachedBytes()).isZero();
			assertThat(released.freeBytes() - cached.freeBytes())
				.as("the cached 256 MiB were held from the driver until released").isGreaterThanOrEqualTo(big - slack);
			System.out.printf("memoryInfo (CUDA): 256 MiB cached %+d, after releasing the cache %+d bytes%n",
					cached.freeBytes() - before.freeBytes(), released.freeBytes() - before.freeBytes());
			stream.destroy();
		}
	}

	/**
	 * The backend's figures once the driver's free memory reached {@code target}, synchronising
	 * {@code stream} between readings (the pool gives memory back at synchronisations), or the last
	 * reading after 10 s.
	 */
	private static MemoryInfo settled(CudaDeviceBackend backend, NativeStream stream, long target)
			throws InterruptedException {
		long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
		MemoryInfo info;
		do {
			stream.synchronize();
			info = backend.memoryInfo();
			if (info.freeBytes() >= target) {
				return info;
			}
			Thread.sleep(10);
		}
		while (System.nanoTime() < deadline);
		return info;
	}

	@Test
	void aSteadyAllocateFreeSynchronizeLoopMakesNoDriverAllocation() {
		NativeMemory first = backend.allocate(1 << 20, this.stream);
		backend.free(first, this.stream);
		this.stream.synchronize();
		long allocations = backend.driverAllocations();
		for (int i = 0; i < 200; i++) {
			NativeMemory buffer = backend.allocate((1 << 20) - (i % 64), this.stream);
			backend.fill(buffer, 0, 1 << 10, (byte) i, this.stream);
			backend.free(buffer, this.stream);
			this.stream.synchronize();
		}
		assertThat(backend.driverAllocations()).as(backend.allocatorStats()).isEqualTo(allocations);
	}

	/**
	 * A buffer freed (stream-ordered) while a kernel still writes it is reused at once by another
	 * stream: the caching allocator hands the same block over, so an early free would let the late
	 * write land in the new owner's data. The new owner's stream must wait for the free's event.
	 */
	@Test
	void memoryFreedWhileAKernelStillWritesItIsReusedOnlyAfterTheKernel() {
		NativeKernel sleep = backend.loadKernel(SLEEP_THEN_WRITE);
		NativeStream other = backend.createStream(StreamPriority.NORMAL, "test-reuse");
		ByteBuffer host = backend.allocateStaging(4);
		backend.releaseCachedMemory(); // so that the block freed below is the only one of its size cached
		backend.defaultStream(DefaultStreamMode.LEGACY).synchronize();
		try {
			NativeMemory early = backend.allocate(4, this.stream);
			backend.launch(sleep, ONE_THREAD, args(TimeUnit.MILLISECONDS.toNanos(300), early, 42), this.stream);
			backend.free(early, this.stream); // ordered after the kernel on this.stream
			NativeMemory reused = backend.allocate(4, other);
			assertThat(((CudaMemory) reused).address).as("the cached block is reused: the test can see an early free")
				.isEqualTo(((CudaMemory) early).address);
			backend.fill(reused, 0, 4, (byte) 7, other);
			this.stream.synchronize(); // the kernel has written by now, wherever it wrote
			backend.copyToHost(reused, 0, host, 4, other);
			backend.free(reused, other);
			other.synchronize();
			assertThat(host.getInt(0)).as("the fill ran after the kernel's write, not before").isEqualTo(0x07070707);
		}
		finally {
			backend.freeStaging(host);
			other.destroy();
		}
	}

	@Test
	void anIntArgumentForA64BitParameterArrivesWhole() {
		NativeKernel store = backend.loadKernel(STORE_I64);
		ByteBuffer host = backend.allocateStaging(16);
		try {
			NativeMemory out = backend.allocate(16, this.stream);
			// The first launch leaves all-ones in this thread's argument slot 0...
			backend.launch(store, ONE_THREAD, args(-1L, out), this.stream);
			// ...which a 4-byte INT must overwrite whole (sign-extended), not only its low half.
			backend.launch(store, ONE_THREAD, args(5, out), this.stream);
			backend.copyToHost(out, 0, host, 8, this.stream);
			this.stream.synchronize();
			assertThat(host.getLong(0)).isEqualTo(5L);
			backend.launch(store, ONE_THREAD, args(-5, out), this.stream);
			backend.copyToHost(out, 0, host, 8, this.stream);
			backend.free(out, this.stream);
			this.stream.synchronize();
			assertThat(host.getLong(0)).isEqualTo(-5L);
		}
		finally {
			backend.freeStaging(host);
		}
	}

	@Test
	void dynamicSharedMemoryAbove48KiBIsOptedIn() {
		int n = 24 * 1024; // 96 KiB of ints
		assertThat(backend.info().maxSharedMemoryPerBlock()).isGreaterThanOrEqualTo(n * 4);
		NativeKernel reverse = backend.loadKernel(SHARED_REVERSE);
		ByteBuffer host = backend.allocateStaging(4L * n);
		try {
			for (int i = 0; i < n; i++) {
				host.putInt(4 * i, i * 3 + 1);
			}
			NativeMemory in = backend.allocate(4L * n, this.stream);
			NativeMemory out = backend.allocate(4L * n, this.stream);
			backend.copyToDevice(host, in, 0, 4L * n, this.stream);
			backend.launch(reverse, LaunchConfig.of(Dim3.of(1), Dim3.of(256)).withSharedMemory(n * 4), args(n, in, out), this.stream);
			backend.copyToHost(out, 0, host, 4L * n, this.stream);
			backend.free(in, this.stream);
			backend.free(out, this.stream);
			this.stream.synchronize();
			for (int i = 0; i < n; i++) {
				int expected = (n - 1 - i) * 3 + 1;
				if (host.getInt(4 * i) != expected) {
					throw new AssertionError("out[" + i + "] = " + host.getInt(4 * i) + ", expected " + expected);
				}
			}
		}
		finally {
			backend.freeStaging(host);
		}
	}

	/**
	 * 32 KiB of static shared memory and 32 KiB of dynamic: 64 KiB per block, over the default 48 KiB
	 * although the dynamic part is under it, so the launch must opt in (counting the static part); a
	 * launch that leaves no room for the static part is refused before the driver, naming both.
	 */
	@Test
	void staticSharedMemoryCountsTowardsTheOptIn() {
		KernelSource kernel = KernelSource.named("static_and_dynamic_shared").params(INT, BUFFER).cuda("""
				extern "C" __global__ void static_and_dynamic_shared(int n, float* out) {
				  __shared__ float fixed[8192];
				  extern __shared__ float dynamic[];
				  for (int i = threadIdx.x; i < 8192; i += blockDim.x) fixed[i] = (float) i;
				  for (int i = threadIdx.x; i < n; i += blockDim.x) dynamic[i] = 2.0f * i;
				  __syncthreads();
				  if (threadIdx.x == 0) out[0] = fixed[8191] + dynamic[n - 1];
				}
				""");
		NativeKernel loaded = backend.loadKernel(kernel);
		int n = 8 * 1024; // 32 KiB of floats
		NativeMemory out = backend.allocate(4, this.stream);
		ByteBuffer host = backend.allocateStaging(4);
		try {
			backend.launch(loaded, LaunchConfig.of(Dim3.of(1), Dim3.of(256)).withSharedMemory(4 * n), args(n, out), this.stream);
			backend.copyToHost(out, 0, host, 4, this.stream);
			this.stream.synchronize();
			assertThat(host.getFloat(0)).isEqualTo(8191f + 2f * (n - 1));
			int perBlock = backend.info().maxSharedMemoryPerBlock();
			int tooMuch = perBlock - 32 * 1024 + 4;
			assertThatThrownBy(() -> backend.launch(loaded, LaunchConfig.of(Dim3.of(1), Dim3.of(256)).withSharedMemory(tooMuch),
					args(tooMuch / 4, out), this.stream))
				.isInstanceOf(dev.gpucompute.InvalidLaunchConfigException.class)
				.hasMessageContaining("32768 static")
				.hasMessageContaining("at most " + (perBlock - 32 * 1024) + " dynamic");
			assertThat(backend.healthProblem()).isNull();
		}
		finally {
			backend.free(out, this.stream);
			this.stream.synchronize();
			backend.freeStaging(host);
		}
	}

	@Test
	void manyWhenDoneCallbacksRunOffTheCallingThreadInOrderAfterTheirWork() throws Exception {
		NativeKernel sleep = backend.loadKernel(SLEEP_THEN_WRITE);
		NativeMemory out = backend.allocate(4, this.stream);
		int count = 2000;
		java.util.List<Integer> order = java.util.Collections.synchronizedList(new java.util.ArrayList<>());
		CountDownLatch all = new CountDownLatch(count);
		AtomicReference<Thread> callbackThread = new AtomicReference<>();
		backend.launch(sleep, ONE_THREAD, args(TimeUnit.MILLISECONDS.toNanos(100), out, 1), this.stream);
		for (int i = 0; i < count; i++) {
			int index = i;
			this.stream.whenDone((failure) -> {
				if (failure == null) {
					order.add(index);
				}
				callbackThread.set(Thread.currentThread());
				all.countDown();
			});
		}
		assertThat(order).as("none before the kernel finished").isEmpty();
		assertThat(all.await(30, TimeUnit.SECONDS)).isTrue();
		assertThat(order).hasSize(count).isSorted();
		assertThat(callbackThread.get()).isNotSameAs(Thread.currentThread());
		backend.free(out, this.stream);
	}

	@Test
	void anImpossibleAllocationIsAnOutOfMemoryError() {
		assertThatThrownBy(() -> backend.allocate(1L << 50, this.stream))
			.isInstanceOf(dev.gpucompute.GpuOutOfMemoryException.class)
			.hasMessageContaining(String.valueOf(1L << 50));
	}

	@Test
	void brokenPtxFailsWithTheJitLog() {
		KernelSource broken = KernelSource.named("broken").ptx(".version 7.0\n.target sm_75\n.address_size 64\n"
				+ ".visible .entry broken() { this is not ptx; }\n");
		assertThatThrownBy(() -> backend.loadKernel(broken)).isInstanceOf(KernelCompilationException.class)
			.hasMessageContaining("cuModuleLoadDataEx")
			.satisfies((ex) -> assertThat(((KernelCompilationException) ex).compilerLog()).isNotBlank());
	}

	@Test
	void aKernelMissingFromTheModuleIsNamed() {
		KernelSource wrongName = KernelSource.named("no_such_kernel").cudaResource(TEST_KERNELS_PTX);
		assertThatThrownBy(() -> backend.loadKernel(wrongName)).isInstanceOf(KernelCompilationException.class)
			.hasMessageContaining("no kernel named 'no_such_kernel'")
			.hasMessageContaining("extern \"C\"");
	}

	@Test
	void cudaCCompileErrorsCarryTheCompilerLog() {
		KernelSource broken = KernelSource.named("broken").cuda("extern \"C\" __global__ void broken() { undeclared_thing = 1; }");
		try {
			backend.loadKernel(broken);
			throw new AssertionError("compiled");
		}
		catch (KernelCompilationException ex) {
			if (ex.getMessage().contains("no CUDA C compiler is available")) {
				org.junit.jupiter.api.Assumptions.abort(ex.getMessage());
			}
			assertThat(ex.compilerLog()).contains("undeclared_thing");
		}
	}

	/** A second backend opened with the same cache directory takes the compiled kernel from disk. */
	@Test
	void aSecondBackendHitsTheCompiledKernelCache(@TempDir Path cacheDir) throws Exception {
		// A unique source, so no earlier run's cache entry can interfere.
		String source = "// " + UUID.randomUUID() + "\n" + SAXPY_SOURCE;
		KernelSource saxpy = KernelSource.named("saxpy").params(INT, FLOAT, BUFFER, BUFFER).cuda(source);
		try (CudaDeviceBackend first = CudaTestSupport.open(cacheDir)) {
			CudaTestSupport.loadCudaC(first, saxpy);
			assertThat(first.compileCount()).isEqualTo(1);
			assertThat(first.cacheHits()).isZero();
		}
		try (Stream<Path> files = Files.list(cacheDir)) {
			assertThat(files.filter((p) -> p.getFileName().toString().endsWith(".module"))).hasSize(1);
		}
		try (CudaDeviceBackend second = CudaTestSupport.open(cacheDir)) {
			NativeKernel kernel = second.loadKernel(saxpy);
			assertThat(second.compileCount()).as("nothing compiled").isZero();
			assertThat(second.cacheHits()).isEqualTo(1);
			assertThat(kernel.name()).isEqualTo("saxpy");
			// The same counts through the SPI, which is what the benchmarks' KernelLoadTimes reads.
			KernelCompilation compilation = second.kernelCompilation();
			assertThat(compilation.compiled()).isZero();
			assertThat(compilation.cacheHits()).isEqualTo(1);
			assertThat(compilation.prebuiltLoads()).isZero();
			assertThat(compilation.cacheDir()).isEqualTo(cacheDir);
			assertThat(compilation.compiler()).isNotBlank();
		}
	}

	@Test
	void highPriorityStreamsGetTheGreatestPriorityAndNormalOnesCudasDefault() {
		NativeStream high = backend.createStream(StreamPriority.HIGH, "high");
		try {
			int highPriority = ((CudaStream) high).priority;
			int normalPriority = ((CudaStream) this.stream).priority;
			// Every GPU this backend supports has a real range (e.g. 0..-5): a [0, 0] range, or HIGH mapped to
			// the same priority as NORMAL, fails here.
			assertThat(highPriority).as("HIGH is numerically lower (stronger) than NORMAL").isLessThan(normalPriority);
			assertThat(normalPriority).isZero();
		}
		finally {
			high.destroy();
		}
	}

	/**
	 * Threads launching with arguments (each launch holds a block of page-locked host memory for its
	 * driver call) while another thread closes the backend: close waits for the calls in the driver
	 * and frees no block under one, so the JVM survives, every launcher ends with a success or a
	 * closed-context error, and no host memory is left once they have stopped.
	 */
	@Test
	void closingWhileOtherThreadsLaunchFreesNoHostMemoryUnderALaunch() throws Exception {
		CudaDeviceBackend closing = CudaTestSupport.open(null);
		NativeKernel saxpy = closing.loadKernel(SAXPY_PTX);
		NativeStream setup = closing.createStream(StreamPriority.NORMAL, "setup");
		NativeMemory x = closing.allocate(4096, setup);
		NativeMemory y = closing.allocate(4096, setup);
		setup.synchronize();
		AtomicInteger launches = new AtomicInteger();
		ConcurrentLinkedQueue<Throwable> unexpected = new ConcurrentLinkedQueue<>();
		List<Thread> threads = new ArrayList<>();
		for (int t = 0; t < 8; t++) {
			Thread thread = new Thread(() -> {
				try {
					NativeStream own = closing.defaultStream(DefaultStreamMode.PER_THREAD);
					for (;;) {
						// n = 0: the kernel reads nothing, so buffers freed at close are never touched.
						closing.launch(saxpy, LaunchConfig.linear(1024, 256), args(0, 2f, x, y), own);
						launches.incrementAndGet();
					}
				}
				catch (ContextClosedException ex) {
					// the expected end
				}
				catch (Throwable ex) {
					unexpected.add(ex);
				}
			}, "launcher-" + t);
			threads.add(thread);
			thread.start();
		}
		long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
		while (launches.get() < 10_000 && System.nanoTime() < deadline) {
			Thread.sleep(1);
		}
		closing.close();
		for (Thread thread : threads) {
			thread.join(TimeUnit.SECONDS.toMillis(30));
			assertThat(thread.isAlive()).as("%s stopped", thread.getName()).isFalse();
		}
		// A launch that raced the close may fail in the driver (its stream or module went) with a GpuException.
		assertThat(unexpected).allSatisfy((ex) -> assertThat(ex).isInstanceOf(GpuException.class));
		assertThat(launches.get()).isPositive();
		assertThat(closing.hostScratchStats()).as("host blocks after close").contains("chunks=0", "lent=0");
	}

	/**
	 * Virtual threads (Java 21+) allocating, launching with arguments and freeing at once: the
	 * allocator's and the host blocks' locks sit between a call's entry and its driver call, and a
	 * virtual thread that waits for one may resume on a carrier where the context is not current; each
	 * driver call after such a wait makes it current again. Aborted (skipped) before Java 21.
	 */
	@Test
	void virtualThreadsThatWaitForTheBackendsLocksStillCallTheDriverInItsContext() throws Exception {
		Method factory;
		try {
			factory = Executors.class.getMethod("newVirtualThreadPerTaskExecutor");
		}
		catch (NoSuchMethodException ex) {
			Assumptions.abort("no virtual threads before Java 21 (this is Java "
					+ Runtime.version().feature() + ")");
			return;
		}
		NativeKernel saxpy = backend.loadKernel(SAXPY_PTX);
		List<Future<?>> done = new ArrayList<>();
		ExecutorService virtual = (ExecutorService) factory.invoke(null);
		try {
			for (int t = 0; t < 256; t++) {
				done.add(virtual.submit(() -> {
					for (int i = 0; i < 50; i++) {
						NativeMemory x = backend.allocate(4096 + 512L * (i % 8), this.stream);
						NativeMemory y = backend.allocate(4096, this.stream);
						backend.launch(saxpy, LaunchConfig.linear(1024, 256), args(1024, 2f, x, y), this.stream);
						backend.free(x, this.stream);
						backend.free(y, this.stream);
					}
					return null;
				}));
			}
			for (Future<?> future : done) {
				future.get(60, TimeUnit.SECONDS); // a call on a carrier without the context fails with CUDA_ERROR_INVALID_CONTEXT
			}
		}
		finally {
			virtual.shutdown();
		}
		this.stream.synchronize();
		assertThat(backend.healthProblem()).isNull();
	}

}
