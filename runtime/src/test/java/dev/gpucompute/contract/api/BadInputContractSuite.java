package dev.gpucompute.contract.api;

import static dev.gpucompute.ParamType.BUFFER;
import static dev.gpucompute.ParamType.INT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.stream.Stream;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import dev.gpucompute.Backend;
import dev.gpucompute.BackendUnavailableException;
import dev.gpucompute.ContextMismatchException;
import dev.gpucompute.DeviceBuffer;
import dev.gpucompute.Dim3;
import dev.gpucompute.ElementType;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuContext.HostMemoryInfo;
import dev.gpucompute.GpuContextBuilder;
import dev.gpucompute.GpuEvent;
import dev.gpucompute.GpuException;
import dev.gpucompute.GpuLauncher;
import dev.gpucompute.GpuOutOfMemoryException;
import dev.gpucompute.GpuStream;
import dev.gpucompute.HostArray;
import dev.gpucompute.HostBuffer;
import dev.gpucompute.InvalidBufferRangeException;
import dev.gpucompute.InvalidKernelArgumentException;
import dev.gpucompute.InvalidLaunchConfigException;
import dev.gpucompute.Kernel;
import dev.gpucompute.KernelCompilationException;
import dev.gpucompute.KernelNotFoundException;
import dev.gpucompute.KernelSource;
import dev.gpucompute.LaunchConfig;
import dev.gpucompute.ParamType;
import dev.gpucompute.PoolExhaustedException;
import dev.gpucompute.PoolTooSmallException;
import dev.gpucompute.StreamLease;
import dev.gpucompute.StreamPool.PoolStats;
import dev.gpucompute.StreamPriority;
import dev.gpucompute.StreamScope;
import dev.gpucompute.contract.ContractKernels;
import dev.gpucompute.contract.RuntimeThreads;
import dev.gpucompute.settings.KernelTiming;

/**
 * The bad-input catalogue, on every backend (docs/runtime.md, "Semantics"): each bad input across the public
 * API gets an exception of a fitting type whose message says what was wrong, and afterwards nothing
 * is held (pool idle, no event in use, device memory back, no thread of the runtime left) and the
 * context still runs a round trip correctly.
 */
public abstract class BadInputContractSuite {

	private static final LaunchConfig ONE = LaunchConfig.of(Dim3.of(1), Dim3.of(1));

	private static final Duration HUGE = Duration.ofSeconds(Long.MAX_VALUE);

	private GpuContext context;

	private long memoryAtStart;

	/** A builder for the backend under test. */
	protected abstract GpuContextBuilder builder();

	@BeforeEach
	void open() {
		this.context = builder().poolSize(1).maxSize(4).acquireTimeout(Duration.ofSeconds(10))
			.kernelTiming(KernelTiming.OFF)
			.open();
		this.memoryAtStart = this.context.memory().usedBytes();
	}

	@AfterEach
	void close() {
		this.context.close();
	}

	/** One bad input: what is done, and the exception and message part expected. */
	record Case(String name, Class<? extends Throwable> type, String message, Action action) {

		@Override
		public String toString() {
			return this.name;
		}

	}

	/** What a case does, with the resources of one run. */
	@FunctionalInterface
	interface Action {

		void run(Fixture fixture) throws Exception;

	}

	/** What a case does with a host buffer. */
	@FunctionalInterface
	interface HostAction {

		void run(HostBuffer host) throws Exception;

	}

	/** Resources a case may use; all of them are released after the case. */
	static final class Fixture implements AutoCloseable {

		final GpuContext context;

		final GpuLauncher launcher;

		final Kernel saxpy;

		final StreamLease lease;

		final GpuStream stream;

		final DeviceBuffer buffer;

		final GpuEvent event;

		private final GpuContextBuilder builder;

		private GpuContext other;

		Fixture(GpuContext context, GpuContextBuilder builder) {
			this.context = context;
			this.builder = builder;
			this.launcher = context.launcher();
			this.saxpy = this.launcher.load(ContractKernels.SAXPY);
			this.lease = context.streams().acquire();
			this.stream = this.lease.stream();
			this.buffer = this.launcher.callWithStream(this.stream, () -> this.launcher.allocate(64, ElementType.BYTE));
			this.event = context.events().create();
		}

		/** A second open context of the same backend, for the cross-context cases. */
		GpuContext other() {
			if (this.other == null) {
				this.other = this.builder.poolSize(1).maxSize(2).kernelTiming(KernelTiming.OFF).open();
			}
			return this.other;
		}

		/** Runs {@code action} with a host buffer of {@code bytes}, closed afterwards. */
		void withHost(long bytes, HostAction action) throws Exception {
			try (HostBuffer host = this.context.launcher().allocateHost(bytes)) {
				action.run(host);
			}
		}

		/** Runs {@code action} on another thread and rethrows what it threw there. */
		void onOtherThread(Action action) throws Exception {
			CompletableFuture<Throwable> thrown = new CompletableFuture<>();
			Thread thread = new Thread(() -> {
				try {
					action.run(this);
					thrown.complete(null);
				}
				catch (Throwable ex) {
					thrown.complete(ex);
				}
			});
			thread.start();
			Throwable failure = thrown.get(30, TimeUnit.SECONDS);
			if (failure instanceof Exception exception) {
				throw exception;
			}
			if (failure instanceof Error error) {
				throw error;
			}
		}

		@Override
		public void close() {
			this.event.close();
			this.buffer.close();
			this.lease.close();
			if (this.other != null) {
				this.other.close();
			}
		}

	}

	private static Case iae(String name, String message, Action action) {
		return new Case(name, IllegalArgumentException.class, message, action);
	}

	private static Case npe(String name, String message, Action action) {
		return new Case(name, NullPointerException.class, message, action);
	}

	private static Case argument(String name, String message, Action action) {
		return new Case(name, InvalidKernelArgumentException.class, message, action);
	}

	private static Case config(String name, String message, Action action) {
		return new Case(name, InvalidLaunchConfigException.class, message, action);
	}

	private static Case range(String name, String message, Action action) {
		return new Case(name, InvalidBufferRangeException.class, message, action);
	}

	private static Case tooSmall(String name, String message, Action action) {
		return new Case(name, PoolTooSmallException.class, message, action);
	}

	private static Case gpu(String name, String message, Action action) {
		return new Case(name, GpuException.class, message, action);
	}

	private static Case foreign(String name, Action action) {
		return new Case(name, ContextMismatchException.class, "another GPU context", action);
	}

	static Stream<Case> cases() {
		List<Case> cases = new ArrayList<>();
		// ---- opening a context
		cases.add(iae("poolSize below 0", "poolSize must be between 0 and 1024", (f) -> GpuContext.builder().poolSize(-1)));
		cases.add(iae("poolSize above the limit", "poolSize must be between 0 and 1024", (f) -> GpuContext.builder().poolSize(1025)));
		cases.add(iae("maxSize 0", "maxSize must be between 1 and 1024", (f) -> GpuContext.builder().maxSize(0)));
		cases.add(iae("maxSize Integer.MAX_VALUE", "maxSize must be between 1 and 1024",
				(f) -> GpuContext.builder().maxSize(Integer.MAX_VALUE)));
		cases.add(iae("poolSize above maxSize", "must not exceed maxSize",
				(f) -> GpuContext.builder().backend(Backend.CPU).poolSize(9).maxSize(8).open()));
		cases.add(iae("negative acquire timeout", "acquireTimeout must not be negative",
				(f) -> GpuContext.builder().acquireTimeout(Duration.ofMillis(-1))));
		cases.add(iae("endless acquire timeout", "acquireTimeout must be at most", (f) -> GpuContext.builder().acquireTimeout(HUGE)));
		cases.add(npe("null acquire timeout", "acquireTimeout", (f) -> GpuContext.builder().acquireTimeout(null)));
		cases.add(iae("endless drain timeout", "drainTimeout must be at most", (f) -> GpuContext.builder().drainTimeout(HUGE)));
		cases.add(iae("negative drain timeout", "drainTimeout must not be negative",
				(f) -> GpuContext.builder().drainTimeout(Duration.ofSeconds(-1))));
		cases.add(iae("endless leak threshold", "leakDetectionThreshold must be at most",
				(f) -> GpuContext.builder().leakDetectionThreshold(HUGE)));
		cases.add(iae("negative leak threshold", "leakDetectionThreshold must not be negative",
				(f) -> GpuContext.builder().leakDetectionThreshold(Duration.ofMillis(-5))));
		cases.add(iae("no CPU worker", "cpuThreads must be between 1 and 4096", (f) -> GpuContext.builder().cpuThreads(0)));
		cases.add(iae("absurd CPU workers", "cpuThreads must be between 1 and 4096",
				(f) -> GpuContext.builder().cpuThreads(Integer.MAX_VALUE)));
		cases.add(iae("empty CPU memory budget", "cpuMemoryBudget must be positive", (f) -> GpuContext.builder().cpuMemoryBudget(0)));
		cases.add(iae("negative release threshold", "memoryPoolReleaseThreshold must not be negative",
				(f) -> GpuContext.builder().memoryPoolReleaseThreshold(-1)));
		cases.add(iae("sampling every nanosecond", "at least PT0.001S",
				(f) -> GpuContext.builder().utilizationSampling(Duration.ofNanos(1), Duration.ofSeconds(10))));
		cases.add(iae("window shorter than the period", "must be at least the sampling period",
				(f) -> GpuContext.builder().utilizationSampling(Duration.ofSeconds(1), Duration.ofMillis(1))));
		cases.add(npe("null sampling period", "period", (f) -> GpuContext.builder().utilizationSampling(null, Duration.ofSeconds(1))));
		cases.add(iae("negative staging cache", "stagingCache must not be negative", (f) -> GpuContext.builder().stagingCache(-1)));
		cases.add(iae("copy chunk of 1000 bytes", "copyChunkSize must be a multiple of 4096 between 4096 and 1073741824, got 1000",
				(f) -> GpuContext.builder().copyChunkSize(1000)));
		cases.add(iae("copy chunk of 0 bytes", "copyChunkSize must be a multiple of 4096", (f) -> GpuContext.builder().copyChunkSize(0)));
		cases.add(iae("copy chunk of 2 GiB", "copyChunkSize must be a multiple of 4096",
				(f) -> GpuContext.builder().copyChunkSize(2L << 30)));
		cases.add(iae("negative copy threads", "copyThreads must be between 0 and 64", (f) -> GpuContext.builder().copyThreads(-1)));
		cases.add(iae("65 copy threads", "copyThreads must be between 0 and 64", (f) -> GpuContext.builder().copyThreads(65)));
		cases.add(iae("negative device ordinal", "Device ordinal must not be negative", (f) -> GpuContext.builder().device(-1)));
		cases.add(npe("null compile option", "compileOptions[1] is null",
				(f) -> GpuContext.builder().compileOptions(java.util.Arrays.asList("-O3", null))));
		cases.add(npe("null kernel timing", "timing", (f) -> GpuContext.builder().kernelTiming(null)));
		cases.add(npe("null listener", "listener", (f) -> GpuContext.builder().listener(null)));
		cases.add(npe("null default stream mode", "mode", (f) -> GpuContext.builder().defaultStream(null)));
		cases.add(new Case("CPU device 7", BackendUnavailableException.class, "got ordinal 7",
				(f) -> GpuContext.builder().backend(Backend.CPU).device(7).open()));
		cases.add(iae("no CPU devices", "cpuDevices must be between 1 and 64", (f) -> GpuContext.builder().cpuDevices(0)));
		cases.add(npe("drain with null timeout", "timeout", (f) -> f.context.drain(null)));
		cases.add(iae("drain with an endless timeout", "timeout must be at most", (f) -> f.context.drain(HUGE)));
		cases.add(iae("drain with a negative timeout", "timeout must not be negative", (f) -> f.context.drain(Duration.ofMillis(-1))));
		// ---- launch configurations
		cases.add(config("zero-sized block", "at least 1 thread in every axis", (f) -> LaunchConfig.of(Dim3.of(1), Dim3.of(0))));
		cases.add(config("block with an empty y axis", "at least 1 thread in every axis",
				(f) -> LaunchConfig.covering(4, 4, Dim3.of(16, 0))));
		cases.add(config("negative block axis", "must not be negative in any axis", (f) -> Dim3.of(1, -1)));
		cases.add(config("negative grid axis", "must not be negative in any axis", (f) -> Dim3.of(-1)));
		cases.add(config("linear launch of -1 elements", "0 or more elements", (f) -> LaunchConfig.linear(-1, 256)));
		cases.add(config("2D launch of a negative width", "0 or more elements in each axis",
				(f) -> LaunchConfig.covering(-1, 4, Dim3.of(16, 16))));
		cases.add(config("2D launch too wide for a grid axis", "more than a grid axis holds (x)",
				(f) -> LaunchConfig.covering(Long.MAX_VALUE, 1, Dim3.of(1, 1))));
		cases.add(config("linear launch of Long.MAX_VALUE elements", "more than a grid axis holds",
				(f) -> LaunchConfig.linear(Long.MAX_VALUE, 1024)));
		cases.add(config("linear launch with empty blocks", "Block size must be at least 1", (f) -> LaunchConfig.linear(10, 0)));
		cases.add(config("null grid", "grid and block dimensions are required", (f) -> LaunchConfig.of(null, Dim3.of(1))));
		cases.add(config("null block", "grid and block dimensions are required", (f) -> new LaunchConfig(Dim3.of(1), null, 0)));
		cases.add(config("negative shared memory", "must not be negative", (f) -> ONE.withSharedMemory(-1)));
		// ---- kernel sources
		cases.add(iae("null kernel name", "must be a C identifier", (f) -> KernelSource.named(null)));
		cases.add(iae("kernel name with a dash", "must be a C identifier", (f) -> KernelSource.named("my-kernel")));
		cases.add(iae("kernel name starting with a digit", "must be a C identifier", (f) -> KernelSource.named("1st")));
		cases.add(npe("null parameter list", "types", (f) -> KernelSource.named("k").params((ParamType[]) null)));
		cases.add(npe("null parameter type", "parameter type", (f) -> KernelSource.named("k").params(INT, null)));
		cases.add(npe("null CUDA source", "source", (f) -> KernelSource.named("k").cuda(null)));
		cases.add(npe("null CPU implementation", "implementation", (f) -> KernelSource.named("k").cpu(null)));
		cases.add(npe("null resource name", "resource", (f) -> KernelSource.named("k").cudaResource(null)));
		cases.add(new Case("missing kernel resource", KernelCompilationException.class, "not found on the class path",
				(f) -> KernelSource.named("k").cudaResource("gpu/none/k.cu")));
		cases.add(iae("resource that is no kernel file", "Not a kernel file", (f) -> KernelSource.formOf("k.so")));
		// ---- the launcher
		cases.add(npe("load null", "source", (f) -> f.launcher.load(null)));
		cases.add(npe("kernel(null)", "name", (f) -> f.launcher.kernel(null)));
		cases.add(new Case("unknown kernel name", KernelNotFoundException.class, "nope", (f) -> f.launcher.kernel("nope")));
		cases.add(gpu("another CPU body under a loaded name", "its CPU implementation is a different object",
				(f) -> f.launcher.load(ContractKernels.SAXPY.cpu((block, args) -> {
				}))));
		cases.add(gpu("other parameters under a loaded name", "its parameters are",
				(f) -> f.launcher.load(KernelSource.named("saxpy").params(INT, INT, BUFFER, BUFFER).cpu((block, args) -> {
				}))));
		cases.add(gpu("launching another CPU body under a loaded name", "already loaded",
				(f) -> f.launcher.launch(ContractKernels.SAXPY.cpu((block, args) -> {
				}), ONE, 1, 1f, f.buffer, f.buffer)));
		cases.add(npe("launch a null kernel", "kernel", (f) -> f.launcher.launch((Kernel) null, ONE)));
		cases.add(npe("launch a null source", "source", (f) -> f.launcher.launch((KernelSource) null, ONE)));
		cases.add(npe("launch on a null stream", "stream", (f) -> f.launcher.launch(null, f.saxpy, ONE, 1, 1f, f.buffer, f.buffer)));
		cases.add(config("launch without a configuration", "needs a launch configuration",
				(f) -> f.launcher.launch(f.stream, f.saxpy, null, 1, 1f, f.buffer, f.buffer)));
		cases.add(argument("launch with a null argument array", "got a null argument array",
				(f) -> f.launcher.launch(f.stream, f.saxpy, ONE, (Object[]) null)));
		cases.add(argument("too few arguments", "takes 4 arguments", (f) -> f.launcher.launch(f.stream, f.saxpy, ONE, 1, 1f)));
		cases.add(argument("too many arguments", "takes 4 arguments",
				(f) -> f.launcher.launch(f.stream, f.saxpy, ONE, 1, 1f, f.buffer, f.buffer, 5)));
		cases.add(argument("an int where a float goes", "must be FLOAT",
				(f) -> f.launcher.launch(f.stream, f.saxpy, ONE, 1, 1, f.buffer, f.buffer)));
		cases.add(argument("an array where a buffer goes", "must be BUFFER",
				(f) -> f.launcher.launch(f.stream, f.saxpy, ONE, 1, 1f, new float[4], f.buffer)));
		cases.add(argument("a null argument", "is null", (f) -> f.launcher.launch(f.stream, f.saxpy, ONE, 1, 1f, null, f.buffer)));
		cases.add(argument("wrong arguments to an empty launch", "must be FLOAT",
				(f) -> f.launcher.launch(f.stream, f.saxpy, LaunchConfig.linear(0, 256), 0, 0, f.buffer, f.buffer)));
		cases.add(gpu("empty launch with a closed buffer", "used after it was closed", (f) -> {
			DeviceBuffer closed = f.launcher.callWithStream(f.stream, () -> f.launcher.allocate(0, ElementType.FLOAT));
			closed.close();
			f.launcher.launch(f.stream, f.saxpy, LaunchConfig.linear(0, 256), 0, 1f, closed, f.buffer);
		}));
		cases.add(gpu("empty launch on the stream of a closed lease", "after its lease was closed", (f) -> {
			StreamLease lease = f.context.streams().acquire();
			lease.close();
			f.launcher.launch(lease.stream(), f.saxpy, LaunchConfig.linear(0, 256), 0, 1f, f.buffer, f.buffer);
		}));
		cases.add(config("2048 threads per block", "threads per block",
				(f) -> f.launcher.launch(f.stream, f.saxpy, LaunchConfig.of(Dim3.of(1), Dim3.of(2048)), 1, 1f, f.buffer, f.buffer)));
		cases.add(config("block z of 128", "block limits",
				(f) -> f.launcher.launch(f.stream, f.saxpy, LaunchConfig.of(Dim3.of(1), Dim3.of(1, 1, 128)), 1, 1f, f.buffer,
						f.buffer)));
		cases.add(config("grid y of 70000", "grid limits",
				(f) -> f.launcher.launch(f.stream, f.saxpy, LaunchConfig.of(Dim3.of(1, 70_000), Dim3.of(1)), 1, 1f, f.buffer,
						f.buffer)));
		cases.add(config("a GiB of shared memory", "dynamic shared memory",
				(f) -> f.launcher.launch(f.stream, f.saxpy, ONE.withSharedMemory(1 << 30), 1, 1f, f.buffer, f.buffer)));
		cases.add(gpu("launch with a closed buffer", "used after it was closed", (f) -> {
			DeviceBuffer closed = f.launcher.callWithStream(f.stream, () -> f.launcher.allocate(16, ElementType.BYTE));
			closed.close();
			f.launcher.launch(f.stream, f.saxpy, ONE, 1, 1f, closed, f.buffer);
		}));
		cases.add(gpu("launch on the stream of a closed lease", "after its lease was closed", (f) -> {
			StreamLease lease = f.context.streams().acquire();
			lease.close();
			f.launcher.launch(lease.stream(), f.saxpy, ONE, 1, 1f, f.buffer, f.buffer);
		}));
		cases.add(npe("parallel(null)", "branches", (f) -> f.launcher.parallel((List<Consumer<GpuStream>>) null)));
		cases.add(npe("parallel with a null branch", "branch", (f) -> f.launcher.parallel(() -> {
		}, null)));
		cases.add(tooSmall("more branches than the pool holds", "Cannot lease 5 streams at once: the stream pool never "
				+ "holds more than 4 (its maximum size: GpuContextBuilder.maxSize, gpu.streams.max-size)",
				(f) -> f.launcher.parallel(() -> {
				}, () -> {
				}, () -> {
				}, () -> {
				}, () -> {
				})));
		cases.add(gpu("nested parallel groups", "cannot be nested", (f) -> f.launcher.parallel(() -> f.launcher.parallel(() -> {
		}))));
		cases.add(npe("useStream(null)", "stream", (f) -> f.launcher.useStream(null)));
		cases.add(npe("withStream without an action", "action", (f) -> f.launcher.withStream(f.stream, null)));
		cases.add(range("allocate -1 bytes", "must not be negative", (f) -> f.launcher.allocate(-1, ElementType.BYTE)));
		cases.add(range("allocate -1 floats", "must not be negative", (f) -> f.launcher.allocate(-1, ElementType.FLOAT)));
		cases.add(range("allocate more doubles than a long of bytes holds", "do not fit in a long",
				(f) -> f.launcher.allocate(Long.MAX_VALUE / 4, ElementType.DOUBLE)));
		cases.add(npe("allocate elements of no type", "type", (f) -> f.launcher.allocate(1, null)));
		cases.add(new Case("allocate Long.MAX_VALUE bytes", GpuOutOfMemoryException.class, String.valueOf(Long.MAX_VALUE),
				(f) -> f.launcher.allocate(Long.MAX_VALUE, ElementType.BYTE)));
		cases.add(npe("upload a null array", "data", (f) -> f.launcher.upload((HostArray) null)));
		cases.add(npe("upload a null array of doubles", "array", (f) -> f.launcher.upload(HostArray.of((double[]) null))));
		// ---- buffers
		cases.add(range("upload at element 2^62 + 1", "does not fit", (f) -> f.buffer.upload(HostArray.of(new float[1]), (1L << 62) + 1, f.stream)));
		cases.add(range("upload at element Long.MAX_VALUE", "does not fit",
				(f) -> f.buffer.upload(HostArray.of(new float[1]), Long.MAX_VALUE, f.stream)));
		cases.add(range("upload at a negative element", "does not fit", (f) -> f.buffer.upload(HostArray.of(new float[1]), -1, f.stream)));
		cases.add(range("upload more than the buffer holds", "does not fit", (f) -> f.buffer.upload(HostArray.of(new float[17]), f.stream)));
		cases.add(range("upload more than the buffer holds on the scope's stream", "does not fit",
				(f) -> f.launcher.withStream(f.stream, () -> f.buffer.upload(HostArray.of(new float[17])))));
		cases.add(range("upload ints at a negative element", "does not fit", (f) -> f.buffer.upload(HostArray.of(new int[1]), -1, f.stream)));
		cases.add(range("upload longs at element Long.MAX_VALUE", "does not fit",
				(f) -> f.buffer.upload(HostArray.of(new long[1]), Long.MAX_VALUE, f.stream)));
		cases.add(range("upload bytes past the end", "does not fit", (f) -> f.buffer.upload(HostArray.of(new byte[2]), 63, f.stream)));
		cases.add(range("download doubles from past the end", "does not fit",
				(f) -> f.buffer.download(HostArray.of(new double[1]), 8, f.stream)));
		cases.add(range("download floats at a negative element", "does not fit",
				(f) -> f.buffer.download(HostArray.of(new float[1]), -1, f.stream)));
		cases.add(range("upload bytes at a negative offset", "does not fit",
				(f) -> f.buffer.upload(HostArray.of(ByteBuffer.allocate(4)), -1, f.stream)));
		cases.add(range("upload bytes past the end", "does not fit", (f) -> f.buffer.upload(HostArray.of(ByteBuffer.allocate(8)), 60, f.stream)));
		cases.add(range("download more than the buffer holds", "does not fit", (f) -> f.buffer.download(HostArray.of(new int[17]), f.stream)));
		cases.add(range("download from past the end", "does not fit",
				(f) -> f.buffer.download(HostArray.of(ByteBuffer.allocate(8)), Long.MAX_VALUE, f.stream)));
		cases.add(iae("download into a read-only buffer", "read-only",
				(f) -> f.buffer.download(HostArray.of(ByteBuffer.allocate(8).asReadOnlyBuffer()), 0, f.stream)));
		cases.add(npe("download into null", "dst", (f) -> f.buffer.download((HostArray) null, f.stream)));
		cases.add(npe("upload on a null stream", "stream", (f) -> f.buffer.upload(HostArray.of(new float[1]), null)));
		cases.add(npe("fill on a null stream", "stream", (f) -> f.buffer.fill((byte) 0, null)));
		cases.add(npe("copy from null", "src", (f) -> f.buffer.copyFrom(null, 0, 0, 4, f.stream)));
		cases.add(range("copy from a negative offset", "does not fit", (f) -> {
			try (DeviceBuffer src = f.launcher.callWithStream(f.stream, () -> f.launcher.allocate(16, ElementType.BYTE))) {
				f.buffer.copyFrom(src, -1, 0, 4, f.stream);
			}
		}));
		cases.add(range("copy from offset Long.MAX_VALUE", "does not fit", (f) -> {
			try (DeviceBuffer src = f.launcher.callWithStream(f.stream, () -> f.launcher.allocate(16, ElementType.BYTE))) {
				f.buffer.copyFrom(src, Long.MAX_VALUE, 0, 8, f.stream);
			}
		}));
		cases.add(range("copy more than the source holds", "does not fit", (f) -> {
			try (DeviceBuffer src = f.launcher.callWithStream(f.stream, () -> f.launcher.allocate(16, ElementType.BYTE))) {
				f.buffer.copyFrom(src, 0, 0, 32, f.stream);
			}
		}));
		cases.add(range("copy within a buffer onto itself", "overlaps itself", (f) -> f.buffer.copyFrom(f.buffer, 0, 8, 16, f.stream)));
		cases.add(npe("native handle of no type", "type", (f) -> f.buffer.nativeHandle(null, f.stream)));
		cases.add(npe("native handle for a null stream", "stream", (f) -> f.buffer.nativeHandle(Long.class, null)));
		cases.add(gpu("native handle of a closed buffer", "used after it was closed", (f) -> {
			DeviceBuffer closed = f.launcher.callWithStream(f.stream, () -> f.launcher.allocate(16, ElementType.BYTE));
			closed.close();
			closed.nativeHandle(Long.class, f.stream);
		}));
		cases.add(gpu("download from a closed buffer", "used after it was closed", (f) -> {
			DeviceBuffer closed = f.launcher.callWithStream(f.stream, () -> f.launcher.allocate(16, ElementType.BYTE));
			closed.close();
			closed.download(HostArray.of(new int[1]), f.stream);
		}));
		// ---- host buffers
		cases.add(range("host buffer of -1 bytes", "A host buffer holds 0 to 2147483647 bytes, got -1", (f) -> f.launcher.allocateHost(-1)));
		cases.add(range("host buffer of 2 GiB", "A host buffer holds 0 to", (f) -> f.context.launcher().allocateHost(1L << 31)));
		cases.add(npe("upload from a null host buffer", "src", (f) -> f.buffer.upload((HostBuffer) null, f.stream)));
		cases.add(npe("download into a null host buffer", "dst", (f) -> f.buffer.download((HostBuffer) null, f.stream)));
		cases.add(npe("host buffer upload on a null stream", "stream", (f) -> f.withHost(16, (host) -> f.buffer.upload(host, null))));
		cases.add(range("host buffer larger than the device buffer", "does not fit a device buffer of 64 bytes",
				(f) -> f.withHost(128, (host) -> f.buffer.upload(host, f.stream))));
		cases.add(range("upload past the end of the host buffer", "does not fit a host buffer of 16 bytes",
				(f) -> f.withHost(16, (host) -> f.buffer.upload(host, 8, 0, 9, f.stream))));
		cases.add(range("upload from a negative host offset", "does not fit a host buffer",
				(f) -> f.withHost(16, (host) -> f.buffer.upload(host, -1, 0, 4, f.stream))));
		cases.add(range("download of a negative byte count", "does not fit",
				(f) -> f.withHost(16, (host) -> f.buffer.download(host, 0, 0, -4, f.stream))));
		cases.add(range("download past the end of the host buffer", "does not fit a host buffer of 16 bytes",
				(f) -> f.withHost(16, (host) -> f.buffer.download(host, 0, Long.MAX_VALUE, 4, f.stream))));
		cases.add(gpu("upload from a closed host buffer", "Host buffer of 16 bytes used after it was closed", (f) -> {
			HostBuffer host = f.context.launcher().allocateHost(16);
			host.close();
			f.buffer.upload(host, f.stream);
		}));
		cases.add(gpu("put into a closed host buffer", "used after it was closed", (f) -> {
			HostBuffer host = f.context.launcher().allocateHost(16);
			host.close();
			host.put(0, HostArray.of(new float[1]));
		}));
		cases.add(gpu("view of a closed host buffer", "used after it was closed", (f) -> {
			HostBuffer host = f.context.launcher().allocateHost(16);
			host.close();
			host.asFloatBuffer();
		}));
		cases.add(range("put past the end of a host buffer", "The write of 8 bytes at offset 12 does not fit a host buffer of 16 bytes",
				(f) -> f.withHost(16, (host) -> host.put(12, HostArray.of(new long[1])))));
		cases.add(range("get from a negative offset", "The read of 4 bytes at offset -4 does not fit",
				(f) -> f.withHost(16, (host) -> host.get(-4, HostArray.of(new int[1])))));
		cases.add(new Case("put of an array range outside the array", IndexOutOfBoundsException.class, "out of bounds for length 2",
				(f) -> f.withHost(16, (host) -> host.put(0, HostArray.of(new double[2], 1, 2)))));
		cases.add(iae("get into a read-only buffer", "read-only",
				(f) -> f.withHost(16, (host) -> host.get(0, HostArray.of(ByteBuffer.allocate(4).asReadOnlyBuffer())))));
		cases.add(npe("put of a null array", "src", (f) -> f.withHost(16, (host) -> host.put(0, (HostArray) null))));
		// ---- streams and events
		cases.add(npe("record on a null stream", "stream", (f) -> f.event.record(null)));
		cases.add(npe("record a null event", "event", (f) -> f.stream.record(null)));
		cases.add(npe("wait for a null event", "event", (f) -> f.stream.waitFor((GpuEvent) null)));
		cases.add(npe("wait for a null stream", "other", (f) -> f.stream.waitFor((GpuStream) null)));
		cases.add(npe("native handle of a stream, of no type", "type", (f) -> f.stream.nativeHandle(null)));
		cases.add(gpu("native handle of a closed lease's stream", "after its lease was closed", (f) -> {
			StreamLease lease = f.context.streams().acquire();
			lease.close();
			lease.stream().nativeHandle(Object.class);
		}));
		cases.add(npe("elapsed since null", "start", (f) -> f.event.elapsedSince(null)));
		cases.add(gpu("elapsed time of events without timing", "two timing events", (f) -> f.event.elapsedSince(f.event)));
		cases.add(gpu("elapsed time of unrecorded events", "never recorded", (f) -> {
			try (GpuEvent start = f.context.events().createTiming(); GpuEvent end = f.context.events().createTiming()) {
				end.elapsedSince(start);
			}
		}));
		cases.add(gpu("use of a closed event", "after it was closed", (f) -> {
			GpuEvent closed = f.context.events().create();
			closed.close();
			closed.record(f.stream);
		}));
		cases.add(gpu("another thread's per-thread default stream", "per-thread default stream", (f) -> {
			GpuStream mine = f.context.defaultStream();
			f.onOtherThread((g) -> g.launcher.launch(mine, g.saxpy, ONE, 1, 1f, g.buffer, g.buffer));
		}));
		cases.add(gpu("a scope closed on another thread", "must be closed on the thread that opened it", (f) -> {
			StreamScope scope = f.launcher.useStream(f.stream);
			try {
				f.onOtherThread((g) -> scope.close());
			}
			finally {
				scope.close();
			}
		}));
		// ---- the pool
		cases.add(npe("acquire with a null timeout", "timeout", (f) -> f.context.streams().acquire((Duration) null)));
		cases.add(iae("acquire with a negative timeout", "must not be negative",
				(f) -> f.context.streams().acquire(Duration.ofMillis(-1))));
		cases.add(iae("acquire with an endless timeout", "must be at most", (f) -> f.context.streams().acquire(HUGE)));
		cases.add(npe("acquire a null priority", "priority", (f) -> f.context.streams().acquire((StreamPriority) null)));
		cases.add(iae("acquire no streams at once", "Can lease 1 to 4 streams",
				(f) -> f.context.streams().acquireAll(StreamPriority.NORMAL, 0, Duration.ofSeconds(1))));
		cases.add(tooSmall("acquire more streams at once than the pool holds", "raise gpu.streams.max-size",
				(f) -> f.context.streams().acquireAll(StreamPriority.NORMAL, 5, Duration.ofSeconds(1))));
		cases.add(tooSmall("acquire a group of high-priority streams larger than the pool", "Cannot lease 1025 streams",
				(f) -> f.context.streams().acquireAll(StreamPriority.HIGH, 1025)));
		cases.add(iae("acquire a group of a negative count", "asked for -1", (f) -> f.context.streams().acquireAll(-1)));
		cases.add(iae("acquire a group of no streams", "Can lease 1 to 4 streams", (f) -> f.context.streams().acquireAll(0)));
		cases.add(iae("acquire a group with a negative timeout", "must not be negative",
				(f) -> f.context.streams().acquireAll(2, Duration.ofMillis(-1))));
		cases.add(npe("acquire a group of a null priority", "priority",
				(f) -> f.context.streams().acquireAll((StreamPriority) null, 2)));
		cases.add(new Case("acquire from an exhausted pool without waiting", PoolExhaustedException.class, "exhausted", (f) -> {
			List<StreamLease> all = f.context.streams().acquireAll(StreamPriority.NORMAL, 3, Duration.ofSeconds(5));
			try {
				f.context.streams().acquire(Duration.ZERO);
			}
			finally {
				all.forEach(StreamLease::close);
			}
		}));
		// ---- handles of another open context
		cases.add(foreign("launch on another context's stream", (f) -> {
			try (StreamLease lease = f.other().streams().acquire()) {
				f.launcher.launch(lease.stream(), f.saxpy, ONE, 1, 1f, f.buffer, f.buffer);
			}
		}));
		cases.add(foreign("launch with another context's buffer", (f) -> {
			try (DeviceBuffer theirs = f.other().launcher().allocate(64, ElementType.BYTE)) {
				f.launcher.launch(f.stream, f.saxpy, ONE, 1, 1f, theirs, f.buffer);
			}
		}));
		cases.add(foreign("launch another context's kernel", (f) -> {
			Kernel theirs = f.other().launcher().load(ContractKernels.SAXPY);
			f.launcher.launch(f.stream, theirs, ONE, 1, 1f, f.buffer, f.buffer);
		}));
		cases.add(foreign("download on another context's stream", (f) -> {
			try (StreamLease lease = f.other().streams().acquire()) {
				f.buffer.download(HostArray.of(new int[1]), lease.stream());
			}
		}));
		cases.add(foreign("upload from another context's host buffer", (f) -> {
			try (HostBuffer theirs = f.other().launcher().allocateHost(16)) {
				f.buffer.upload(theirs, f.stream);
			}
		}));
		cases.add(foreign("download into another context's host buffer", (f) -> {
			try (HostBuffer theirs = f.other().launcher().allocateHost(16)) {
				f.buffer.download(theirs, f.stream);
			}
		}));
		cases.add(foreign("copy from another context's buffer", (f) -> {
			try (DeviceBuffer theirs = f.other().launcher().allocate(64, ElementType.BYTE)) {
				f.buffer.copyFrom(theirs, 0, 0, 8, f.stream);
			}
		}));
		cases.add(foreign("record another context's event", (f) -> {
			try (GpuEvent theirs = f.other().events().create()) {
				theirs.record(f.stream);
			}
		}));
		cases.add(foreign("wait for another context's stream", (f) -> {
			try (StreamLease lease = f.other().streams().acquire()) {
				f.stream.waitFor(lease.stream());
			}
		}));
		cases.add(foreign("wait for another context's event", (f) -> {
			try (GpuEvent theirs = f.other().events().create()) {
				f.stream.waitFor(theirs);
			}
		}));
		cases.add(foreign("scope another context's stream", (f) -> {
			try (StreamLease lease = f.other().streams().acquire()) {
				f.launcher.useStream(lease.stream());
			}
		}));
		return cases.stream();
	}

	@ParameterizedTest(name = "{0}")
	@MethodSource("cases")
	void badInputGetsAClearErrorAndLeavesNothingBehind(Case bad) throws Exception {
		Set<Thread> threadsBefore = RuntimeThreads.snapshot();
		try (Fixture fixture = new Fixture(this.context, builder())) {
			assertThatThrownBy(() -> bad.action().run(fixture)).isInstanceOf(bad.type())
				.hasMessageContaining(bad.message());
		}
		assertThat(this.context.isHealthy()).isTrue();
		assertNothingLeaked();
		assertThat(RuntimeThreads.leftSince(threadsBefore, 5, ownThreadPrefix(this.context)))
			.as("threads of contexts that failed to open or were closed").isEmpty();
		assertRoundTripWorks();
	}

	private void assertNothingLeaked() {
		this.context.synchronizeDevice();
		PoolStats stats = this.context.streams().stats();
		assertThat(stats.active()).as("leased streams").isZero();
		assertThat(stats.idle()).as("idle streams").isEqualTo(stats.size());
		assertThat(this.context.events().inUse()).as("events in use").isZero();
		assertThat(this.context.memory().usedBytes()).as("device memory in use").isEqualTo(this.memoryAtStart);
		HostMemoryInfo host = this.context.hostMemory();
		assertThat(host.hostBuffers()).as("host buffers held").isZero();
		assertThat(host.stagingBytes()).as("staging held by copies").isZero();
	}

	private void assertRoundTripWorks() {
		GpuLauncher launcher = this.context.launcher();
		float[] y = { 1, 2, 3, 4, 5 };
		try (StreamLease lease = this.context.streams().acquire(); StreamScope scope = launcher.useStream(lease.stream());
				DeviceBuffer dx = launcher.upload(HostArray.of(new float[] { 1, 1, 1, 1, 1 })); DeviceBuffer dy = launcher.upload(HostArray.of(y))) {
			launcher.launch(ContractKernels.SAXPY, LaunchConfig.linear(5, 32), 5, 3f, dx, dy);
			dy.download(HostArray.of(y), lease.stream()).join();
		}
		assertThat(y).containsExactly(4, 5, 6, 7, 8);
	}

	/** "gpu-N-": the prefix of the threads of context #N, which stays open across the case. */
	private static String ownThreadPrefix(GpuContext context) {
		String text = context.toString(); // GpuContext#N[...]
		return "gpu-" + text.substring(text.indexOf('#') + 1, text.indexOf('[')) + "-";
	}


}
