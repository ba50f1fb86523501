package dev.gpucompute.cpu;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import dev.gpucompute.Backend;
import dev.gpucompute.DeviceBuffer;
import dev.gpucompute.Dim3;
import dev.gpucompute.ElementType;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuLauncher;
import dev.gpucompute.GpuOutOfMemoryException;
import dev.gpucompute.HostArray;
import dev.gpucompute.Kernel;
import dev.gpucompute.KernelLaunchException;
import dev.gpucompute.KernelSource;
import dev.gpucompute.LaunchConfig;
import dev.gpucompute.ParamType;
import dev.gpucompute.StreamLease;
import dev.gpucompute.UnsupportedBackendOperationException;
import dev.gpucompute.listener.GpuListener;
import dev.gpucompute.settings.KernelTiming;

/** What only the CPU backend can show: Java kernels that throw, block coverage, the memory budget. */
class CpuBackendTests {

	private final List<String> failures = new CopyOnWriteArrayList<>();

	private final List<String> launched = new CopyOnWriteArrayList<>();

	private final List<String> timed = new CopyOnWriteArrayList<>();

	private GpuContext context;

	@BeforeEach
	void open() {
		GpuListener listener = new GpuListener() {
			@Override
			public void kernelLaunched(String kernel, boolean success) {
				CpuBackendTests.this.launched.add(kernel + ":" + success);
			}

			@Override
			public void kernelFailed(String kernel) {
				CpuBackendTests.this.failures.add(kernel);
			}

			@Override
			public void kernelTimed(String kernel, long nanos) {
				CpuBackendTests.this.timed.add(kernel);
			}
		};
		this.context = GpuContext.builder().backend(Backend.CPU).cpuThreads(3).poolSize(1).maxSize(4)
			.cpuMemoryBudget(1 << 20).kernelTiming(KernelTiming.ALL).listener(listener).open();
	}

	@AfterEach
	void close() {
		this.context.close();
	}

	@Test
	void kernelThatThrowsSurfacesAtSynchronizeNamingKernelAndStreamAndTheStreamStaysUsable() {
		AtomicInteger calls = new AtomicInteger();
		KernelSource failing = KernelSource.named("explode").params(ParamType.INT).cpu((block, args) -> {
			if (calls.incrementAndGet() == 1) {
				throw new IllegalStateException("bad input " + args.i32(0));
			}
		});
		Kernel kernel = this.context.launcher().load(failing);
		try (StreamLease lease = this.context.streams().acquire()) {
			this.context.launcher().launch(lease.stream(), kernel, LaunchConfig.of(Dim3.of(1), Dim3.of(1)), 7);
			assertThatThrownBy(() -> lease.stream().synchronize()).isInstanceOf(KernelLaunchException.class)
				.hasMessageContaining("'explode'")
				.hasMessageContaining(lease.stream().name())
				.hasMessageContaining("bad input 7")
				.satisfies((ex) -> assertThat(((KernelLaunchException) ex).kernelName()).isEqualTo("explode"));
			// Reported once; the stream runs the next launch normally.
			this.context.launcher().launch(lease.stream(), kernel, LaunchConfig.of(Dim3.of(1), Dim3.of(1)), 8);
			lease.stream().synchronize();
			assertThat(calls).hasValue(2);
		}
		assertThat(kernel.stats().errors()).isEqualTo(1);
		assertThat(kernel.stats().launches()).isEqualTo(2);
		assertThat(this.failures).containsExactly("explode");
	}

	/** The documented identity of {@code CpuKernel.Args}: one instance per launch, shared by its blocks. */
	@Test
	void everyBlockOfALaunchSeesTheSameArgumentsAndEveryLaunchItsOwn() {
		java.util.Map<Integer, java.util.Set<Object>> seen = new java.util.concurrent.ConcurrentHashMap<>();
		KernelSource source = KernelSource.named("who").params(ParamType.INT).cpu((block, args) -> seen
			.computeIfAbsent(args.i32(0), (launch) -> java.util.concurrent.ConcurrentHashMap.newKeySet())
			.add(args));
		Kernel kernel = this.context.launcher().load(source);
		for (int launch = 0; launch < 3; launch++) {
			this.context.launcher().launch(kernel, LaunchConfig.of(Dim3.of(64), Dim3.of(1)), launch);
		}
		this.context.launcher().currentStream().synchronize();
		assertThat(seen).hasSize(3);
		assertThat(seen.values()).allSatisfy((instances) -> assertThat(instances).hasSize(1));
		java.util.Set<Object> all = java.util.Collections.newSetFromMap(new java.util.IdentityHashMap<>());
		seen.values().forEach(all::addAll);
		assertThat(all).hasSize(3);
	}

	@Test
	void failedKernelCompletesTheStreamFutureExceptionally() {
		KernelSource failing = KernelSource.named("fails").cpu((block, args) -> {
			throw new ArithmeticException("division by zero");
		});
		try (StreamLease lease = this.context.streams().acquire()) {
			this.context.launcher().launch(lease.stream(), this.context.launcher().load(failing),
					LaunchConfig.of(Dim3.of(4), Dim3.of(1)));
			assertThatThrownBy(() -> lease.stream().completion().get(10, TimeUnit.SECONDS))
				.hasCauseInstanceOf(KernelLaunchException.class)
				.hasMessageContaining("'fails'");
			// Reported once, to the future: a later synchronisation of the same work does not repeat it.
			lease.stream().synchronize();
		}
	}

	@Test
	void kernelWithoutCpuImplementationIsAClearErrorOnTheCpuBackend() {
		KernelSource cudaOnly = KernelSource.named("cuda_only").cuda("extern \"C\" __global__ void cuda_only() {}");
		Kernel kernel = this.context.launcher().load(cudaOnly);
		assertThatThrownBy(() -> this.context.launcher().launch(kernel, LaunchConfig.of(Dim3.of(1), Dim3.of(1))))
			.isInstanceOf(UnsupportedBackendOperationException.class)
			.hasMessageContaining("'cuda_only' has no CPU implementation");
		assertThat(kernel.stats().errors()).isEqualTo(1);
		assertThat(this.launched).containsExactly("cuda_only:false");
		assertThat(this.context.events().stats().internal()).as("the timing event of the rejected launch").isZero();
	}

	@Test
	void everyBlockOfA3dGridRunsExactlyOnce() {
		Dim3 grid = Dim3.of(7, 5, 3);
		int blocks = (int) grid.volume();
		KernelSource mark = KernelSource.named("mark").params(ParamType.BUFFER).cpu((block, args) -> {
			int linear = block.x() + block.gridDim().x() * (block.y() + block.gridDim().y() * block.z());
			args.ints(0).put(linear, args.ints(0).get(linear) + 1);
		});
		try (DeviceBuffer counts = this.context.launcher().allocate(4L * blocks, ElementType.BYTE)) {
			counts.fill((byte) 0, counts.stream());
			this.context.launcher().launch(mark, LaunchConfig.of(grid, Dim3.of(32)), counts);
			int[] host = new int[blocks];
			counts.download(HostArray.of(host), counts.stream()).join();
			assertThat(host).containsOnly(1);
		}
	}

	@Test
	void sharedMemoryIsPrivateToABlockAndZeroed() {
		KernelSource shared = KernelSource.named("shared").params(ParamType.BUFFER).cpu((block, args) -> {
			java.nio.ByteBuffer memory = block.sharedMemory();
			int before = memory.getInt(0);
			memory.putInt(0, block.x() + 1);
			args.ints(0).put(block.x(), before);
		});
		try (DeviceBuffer seen = this.context.launcher().allocate(4 * 64, ElementType.BYTE)) {
			seen.fill((byte) 0x7f, seen.stream());
			this.context.launcher().launch(shared, LaunchConfig.of(Dim3.of(64), Dim3.of(1)).withSharedMemory(16), seen);
			int[] host = new int[64];
			seen.download(HostArray.of(host), seen.stream()).join();
			assertThat(host).containsOnly(0);
		}
	}

	@Test
	void groupAcquisitionTimeoutsReachTheListener() {
		AtomicInteger timeouts = new AtomicInteger();
		GpuListener listener = new GpuListener() {
			@Override
			public void leaseTimedOut(long waitNanos) {
				timeouts.incrementAndGet();
			}
		};
		try (GpuContext small = GpuContext.builder().backend(Backend.CPU).cpuThreads(1).poolSize(0).maxSize(2)
			.acquireTimeout(Duration.ofMillis(20)).listener(listener).open();
				StreamLease held = small.streams().acquire()) {
			assertThatThrownBy(() -> small.launcher().parallel(() -> {
			}, () -> {
			})).isInstanceOf(dev.gpucompute.PoolExhaustedException.class);
			assertThat(timeouts).hasValue(1);
			assertThat(small.streams().stats().timeouts()).isEqualTo(1);
			assertThat(small.streams().stats().active()).isEqualTo(1);
		}
	}

	@Test
	void memoryBudgetIsEnforcedAndReturned() {
		long start = this.context.memory().usedBytes();
		DeviceBuffer big = this.context.launcher().allocate(768 * 1024, ElementType.BYTE);
		assertThatThrownBy(() -> this.context.launcher().allocate(512 * 1024, ElementType.BYTE))
			.isInstanceOf(GpuOutOfMemoryException.class)
			.hasMessageContaining("524288 bytes");
		big.close();
		this.context.synchronizeDevice();
		assertThat(this.context.memory().usedBytes()).isEqualTo(start);
		assertThat(this.context.memory().liveBuffers()).isZero();
	}

	@Test
	void deviceTimeIsNeverNegativeWhenLaunchesQueueBehindOtherWork() throws Exception {
		// Regression: a timing stamp taken by a completion callback could run after the timed kernel.
		java.util.concurrent.atomic.AtomicLong smallest = new java.util.concurrent.atomic.AtomicLong(Long.MAX_VALUE);
		AtomicInteger count = new AtomicInteger();
		GpuListener listener = new GpuListener() {
			@Override
			public void kernelTimed(String kernel, long nanos) {
				smallest.accumulateAndGet(nanos, Math::min);
				count.incrementAndGet();
			}
		};
		KernelSource empty = KernelSource.named("empty").cpu((block, args) -> {
		});
		try (GpuContext timed = GpuContext.builder().backend(Backend.CPU).cpuThreads(2).poolSize(1)
			.kernelTiming(KernelTiming.ALL).listener(listener).open()) {
			for (int i = 0; i < 300; i++) {
				try (DeviceBuffer buffer = timed.launcher().upload(HostArray.of(new float[256]))) {
					timed.launcher().launch(empty, LaunchConfig.of(Dim3.of(1), Dim3.of(1)));
					timed.launcher().launch(empty, LaunchConfig.of(Dim3.of(1), Dim3.of(1)));
				}
			}
			timed.synchronizeDevice();
			long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
			while (count.get() < 600 && System.nanoTime() < deadline) {
				Thread.sleep(5);
			}
		}
		assertThat(count).hasValue(600);
		assertThat(smallest.get()).isGreaterThanOrEqualTo(0);
	}

	@Test
	void sampledTimingHoldsABoundedNumberOfEventsBehindABacklog() throws Exception {
		CountDownLatch gate = new CountDownLatch(1);
		KernelSource blocker = KernelSource.named("blocker").cpu((block, args) -> {
			try {
				gate.await();
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
			}
		});
		KernelSource empty = KernelSource.named("empty").cpu((block, args) -> {
		});
		int launches = KernelTiming.SAMPLE_EVERY * 3 * KernelTiming.MAX_SAMPLES_IN_FLIGHT;
		try (GpuContext sampled = GpuContext.builder().backend(Backend.CPU).cpuThreads(2).poolSize(1)
			.kernelTiming(KernelTiming.SAMPLED).open()) {
			GpuLauncher launcher = sampled.launcher();
			Kernel kernel = launcher.load(empty);
			try {
				launcher.launch(blocker, LaunchConfig.of(Dim3.of(1), Dim3.of(1)));
				for (int i = 0; i < launches; i++) {
					launcher.launch(kernel, LaunchConfig.of(Dim3.of(1), Dim3.of(1)));
				}
				// Nothing has run yet: without the bound, 3x as many timing events would be held now.
				assertThat(sampled.events().stats().internal()).isLessThanOrEqualTo(2 * KernelTiming.MAX_SAMPLES_IN_FLIGHT + 2);
			}
			finally {
				gate.countDown();
			}
			launcher.currentStream().synchronize();
			long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
			while (sampled.events().stats().internal() > 0 && System.nanoTime() < deadline) {
				Thread.sleep(5);
			}
			assertThat(sampled.events().stats().internal()).isZero();
			assertThat(kernel.stats().timedLaunches()).isPositive().isLessThanOrEqualTo(KernelTiming.MAX_SAMPLES_IN_FLIGHT);
			assertThat(sampled.events().stats().destroyed()).as("every timing event was recycled").isZero();
		}
	}

	@Test
	void timedLaunchesReportDeviceTime() throws Exception {
		KernelSource nap = KernelSource.named("nap").cpu((block, args) -> {
			try {
				Thread.sleep(20);
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
			}
		});
		Kernel kernel = this.context.launcher().load(nap);
		for (int i = 0; i < 3; i++) {
			this.context.launcher().launch(kernel, LaunchConfig.of(Dim3.of(1), Dim3.of(1)));
		}
		this.context.launcher().currentStream().synchronize();
		long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
		while (kernel.stats().timedLaunches() < 3 && System.nanoTime() < deadline) {
			Thread.sleep(5);
		}
		assertThat(kernel.stats().timedLaunches()).isEqualTo(3);
		assertThat(kernel.stats().meanDeviceTime()).isGreaterThanOrEqualTo(Duration.ofMillis(15));
		assertThat(this.timed).containsExactly("nap", "nap", "nap");
		while (this.context.events().stats().internal() > 0 && System.nanoTime() < deadline) {
			Thread.sleep(5);
		}
		assertThat(this.context.events().stats().internal()).as("timing events returned once read").isZero();
	}

}
