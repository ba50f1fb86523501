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

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Stream;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import dev.gpucompute.Backend;
import dev.gpucompute.DefaultStreamMode;
import dev.gpucompute.DeviceInfo;
import dev.gpucompute.Dim3;
import dev.gpucompute.GpuException;
import dev.gpucompute.KernelCompilationException;
import dev.gpucompute.KernelSource;
import dev.gpucompute.LaunchConfig;
import dev.gpucompute.MemoryInfo;
import dev.gpucompute.StreamPriority;
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

	@Test
	void memoryInfoCountsThisBackendsBuffers() {
		MemoryInfo before = backend.memoryInfo();
		NativeMemory buffer = backend.allocate(1 << 20, this.stream);
		MemoryInfo during = backend.memoryInfo();
		assertThat(during.usedBytes() - before.usedBytes()).isEqualTo(1 << 20);
		assertThat(during.liveBuffers() - before.liveBuffers()).isEqualTo(1);
		assertThat(during.totalBytes()).isPositive();
		assertThat(during.freeBytes()).isPositive().isLessThanOrEqualTo(during.totalBytes());
		backend.free(buffer, this.stream);
		backend.free(buffer, this.stream); // a second free is a no-op
		assertThat(backend.memoryInfo().liveBuffers()).isEqualTo(before.liveBuffers());
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
		}
	}

	@Test
	void highPriorityStreamsGetTheGreatestPriority() {
		NativeStream high = backend.createStream(StreamPriority.HIGH, "high");
		try {
			assertThat(((CudaStream) high).priority).isLessThanOrEqualTo(((CudaStream) this.stream).priority);
		}
		finally {
			high.destroy();
		}
	}

}
