package dev.gpucompute.autoconfigure.metrics;

import static dev.gpucompute.ParamType.BUFFER;
import static dev.gpucompute.ParamType.INT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import dev.gpucompute.Backend;
import dev.gpucompute.DeviceBuffer;
import dev.gpucompute.ElementType;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuEvent;
import dev.gpucompute.GpuLauncher;
import dev.gpucompute.HostArray;
import dev.gpucompute.Kernel;
import dev.gpucompute.KernelLaunchException;
import dev.gpucompute.KernelSource;
import dev.gpucompute.LaunchConfig;
import dev.gpucompute.PoolExhaustedException;
import dev.gpucompute.StreamLease;
import dev.gpucompute.UnsupportedBackendOperationException;
import dev.gpucompute.settings.KernelTiming;

/**
 * {@link GpuMetrics} and {@link MicrometerGpuListener} on a real CPU-backend context: every meter of
 * docs/observability.md, "Meters" exists with its tags and moves with real launches and pool activity.
 */
class GpuMetricsTests {

	/** Adds one to every cell of an int buffer of length n. */
	static final KernelSource ADD_ONE = KernelSource.named("add_one").params(INT, BUFFER).cpu((block, args) -> {
		int n = args.i32(0);
		var cells = args.ints(1);
		for (int i = (int) block.firstIndex(); i < block.endIndex(n); i++) {
			cells.put(i, cells.get(i) + 1);
		}
	});

	/** Fails while it runs, so the failure surfaces at the next synchronisation. */
	static final KernelSource FAILS = KernelSource.named("fails").params(INT).cpu((block, args) -> {
		throw new IllegalStateException("kernel failure on purpose");
	});

	/** CUDA only: the CPU backend rejects its launches. */
	static final KernelSource CUDA_ONLY = KernelSource.named("cuda_only")
		.params(INT)
		.cuda("extern \"C\" __global__ void cuda_only(int n) { }");

	private final SimpleMeterRegistry registry = new SimpleMeterRegistry();

	private final MicrometerGpuListener listener = new MicrometerGpuListener();

	private GpuContext context;

	private GpuLauncher launcher;

	@BeforeEach
	void open() {
		this.context = GpuContext.builder()
			.backend(Backend.CPU)
			.poolSize(2)
			.maxSize(2)
			.cpuThreads(2)
			.kernelTiming(KernelTiming.ALL)
			.listener(this.listener)
			.open();
		this.launcher = this.context.launcher();
		this.launcher.load(ADD_ONE);
		new GpuMetrics(this.context, this.listener).bindTo(this.registry);
	}

	@AfterEach
	void close() {
		this.context.close();
	}

	@Test
	void everyMeterHasTheDeviceTags() {
		Tags device = Tags.of("gpu", "0", "backend", "cpu", "uuid", this.context.device().uuid());
		List<String> names = List.of(GpuMeterNames.STREAMS_ACTIVE, GpuMeterNames.STREAMS_IDLE, GpuMeterNames.STREAMS_PENDING,
				GpuMeterNames.STREAMS_MAX, GpuMeterNames.STREAMS_ACQUIRE, GpuMeterNames.STREAMS_USAGE,
				GpuMeterNames.STREAMS_TIMEOUT, GpuMeterNames.STREAMS_UTILIZATION, GpuMeterNames.EVENTS_LIVE,
				GpuMeterNames.MEMORY_USED, GpuMeterNames.MEMORY_TOTAL, GpuMeterNames.KERNEL_LAUNCHES,
				GpuMeterNames.KERNEL_DURATION);
		for (String name : names) {
			Collection<Meter> meters = this.registry.find(name).tags(device).meters();
			assertThat(meters).as(name).isNotEmpty();
		}
		assertThat(this.registry.get(GpuMeterNames.STREAMS_ACQUIRE).timer()).isInstanceOf(Timer.class);
		assertThat(this.registry.get(GpuMeterNames.STREAMS_TIMEOUT).functionCounter()).isNotNull();
		assertThat(this.registry.get(GpuMeterNames.MEMORY_USED).gauge().getId().getBaseUnit()).isEqualTo("bytes");
	}

	@Test
	void kernelsLoadedBeforeBindingHaveMetersAtZero() {
		assertThat(launches("add_one", "success")).isZero();
		assertThat(launches("add_one", "error")).isZero();
		assertThat(this.registry.get(GpuMeterNames.KERNEL_DURATION).tag("kernel", "add_one").timer().count()).isZero();
	}

	@Test
	void launchCountsAreExact() {
		Kernel addOne = this.launcher.kernel("add_one");
		int[] cells = new int[100];
		try (DeviceBuffer buffer = this.launcher.upload(HostArray.of(cells))) {
			for (int i = 0; i < 7; i++) {
				this.launcher.launch(addOne, LaunchConfig.linear(cells.length, 32), cells.length, buffer);
			}
			this.launcher.currentStream().synchronize();
			buffer.download(HostArray.of(cells), this.launcher.currentStream()).join();
		}
		assertThat(cells).containsOnly(7);
		assertThat(launches("add_one", "success")).isEqualTo(7);
		assertThat(launches("add_one", "error")).isZero();
		assertThat(addOne.stats().launches()).isEqualTo(7);
	}

	@Test
	void kernelLoadedAfterBindingIsRegisteredOnItsFirstLaunch() {
		KernelSource late = KernelSource.named("late").params(INT).cpu((block, args) -> {
		});
		assertThat(this.registry.find(GpuMeterNames.KERNEL_LAUNCHES).tag("kernel", "late").functionCounters()).isEmpty();
		this.launcher.launch(late, LaunchConfig.linear(1, 1), 1);
		this.launcher.launch(late, LaunchConfig.linear(1, 1), 1);
		this.launcher.currentStream().synchronize();
		assertThat(launches("late", "success")).isEqualTo(2);
	}

	@Test
	void kernelFailingWhileRunningCountsAsError() {
		this.launcher.launch(FAILS, LaunchConfig.linear(1, 1), 1);
		assertThatExceptionOfType(KernelLaunchException.class).isThrownBy(() -> this.launcher.currentStream().synchronize())
			.withMessageContaining("fails");
		// The launch was enqueued (success) and then failed on the device (error), like Kernel.stats().
		assertThat(launches("fails", "success")).isEqualTo(1);
		assertThat(launches("fails", "error")).isEqualTo(1);
	}

	@Test
	void launchRejectedByTheBackendCountsAsError() {
		assertThatExceptionOfType(UnsupportedBackendOperationException.class)
			.isThrownBy(() -> this.launcher.launch(CUDA_ONLY, LaunchConfig.linear(1, 1), 1));
		assertThatExceptionOfType(UnsupportedBackendOperationException.class)
			.isThrownBy(() -> this.launcher.launch(CUDA_ONLY, LaunchConfig.linear(1, 1), 1));
		assertThat(launches("cuda_only", "error")).isEqualTo(2);
		assertThat(launches("cuda_only", "success")).isZero();
	}

	@Test
	void timedLaunchesRecordDeviceTime() {
		Kernel addOne = this.launcher.kernel("add_one");
		try (DeviceBuffer buffer = this.launcher.upload(HostArray.of(new int[64]))) {
			for (int i = 0; i < 5; i++) {
				this.launcher.launch(addOne, LaunchConfig.linear(64, 32), 64, buffer);
			}
			this.launcher.currentStream().synchronize();
		}
		Timer duration = this.registry.get(GpuMeterNames.KERNEL_DURATION).tag("kernel", "add_one").timer();
		// Device times are read on the completion thread after the stream is done: wait for them.
		awaitTrue(() -> duration.count() == 5);
		assertThat(duration.count()).isEqualTo(5);
		assertThat(addOne.stats().timedLaunches()).isEqualTo(5);
		assertThat(duration.totalTime(TimeUnit.NANOSECONDS)).isPositive()
			.isEqualTo(addOne.stats().deviceTime().toNanos());
	}

	@Test
	void namesThatAreNotLoadedKernelsGetNoMeters() {
		this.listener.kernelLaunched("user input " + System.nanoTime(), true);
		this.listener.kernelTimed("not-a-kernel", 1_000);
		this.listener.kernelFailed("neither");
		assertThat(this.registry.find(GpuMeterNames.KERNEL_LAUNCHES).meters()).extracting((m) -> m.getId().getTag("kernel"))
			.containsOnly("add_one");
		assertThat(this.registry.find(GpuMeterNames.KERNEL_DURATION).meters()).hasSize(1);
	}

	@Test
	void poolGaugesStayConsistentUnderContention() throws Exception {
		assertPool(0, 2, 0);
		assertThat(gauge(GpuMeterNames.STREAMS_MAX)).isEqualTo(2);
		StreamLease first = this.context.streams().acquire();
		StreamLease second = this.context.streams().acquire();
		assertPool(2, 0, 0);
		ExecutorService waiters = Executors.newFixedThreadPool(3);
		try {
			List<Future<?>> done = new ArrayList<>();
			for (int i = 0; i < 3; i++) {
				done.add(waiters.submit(() -> {
					try (StreamLease lease = this.context.streams().acquire(Duration.ofSeconds(30))) {
						return lease.stream().name();
					}
				}));
			}
			awaitTrue(() -> gauge(GpuMeterNames.STREAMS_PENDING) == 3);
			assertPool(2, 0, 3);
			first.close();
			second.close();
			for (Future<?> future : done) {
				future.get(30, TimeUnit.SECONDS);
			}
		}
		finally {
			waiters.shutdownNow();
		}
		assertPool(0, 2, 0);
		Timer acquire = this.registry.get(GpuMeterNames.STREAMS_ACQUIRE).timer();
		Timer usage = this.registry.get(GpuMeterNames.STREAMS_USAGE).timer();
		assertThat(acquire.count()).isEqualTo(5);
		assertThat(usage.count()).isEqualTo(5);
		assertThat(this.context.streams().stats().acquisitions()).isEqualTo(5);
		// The three waiters each waited for a lease that was only returned after they were seen pending.
		assertThat(acquire.max(TimeUnit.NANOSECONDS)).isPositive();
	}

	@Test
	void timeoutsAreCounted() {
		try (StreamLease first = this.context.streams().acquire();
				StreamLease second = this.context.streams().acquire()) {
			for (int i = 0; i < 2; i++) {
				assertThatExceptionOfType(PoolExhaustedException.class)
					.isThrownBy(() -> this.context.streams().acquire(Duration.ofMillis(20)));
			}
		}
		FunctionCounter timeouts = this.registry.get(GpuMeterNames.STREAMS_TIMEOUT).functionCounter();
		assertThat(timeouts.count()).isEqualTo(2);
		assertThat(this.registry.get(GpuMeterNames.STREAMS_ACQUIRE).timer().count()).isEqualTo(2);
		assertPool(0, 2, 0);
	}

	@Test
	void utilizationGaugeReadsThePoolsBusyShare() {
		double gauge = gauge(GpuMeterNames.STREAMS_UTILIZATION);
		assertThat(gauge).isBetween(0.0, 1.0);
		assertThat(gauge).isEqualTo(this.context.streams().stats().utilization());
	}

	@Test
	void liveEventsFollowTheRegistry() {
		int before = (int) gauge(GpuMeterNames.EVENTS_LIVE);
		assertThat(before).isEqualTo(this.context.events().live());
		GpuEvent one = this.context.events().create();
		GpuEvent two = this.context.events().createTiming();
		assertThat(gauge(GpuMeterNames.EVENTS_LIVE)).isEqualTo(this.context.events().live()).isGreaterThanOrEqualTo(before + 2);
		one.close();
		two.close();
		this.context.close();
		assertThat(gauge(GpuMeterNames.EVENTS_LIVE)).isZero();
	}

	@Test
	void memoryGaugesFollowBuffers() {
		double total = gauge(GpuMeterNames.MEMORY_TOTAL);
		assertThat(total).isEqualTo(this.context.device().totalMemoryBytes());
		double before = gauge(GpuMeterNames.MEMORY_USED);
		try (DeviceBuffer buffer = this.launcher.allocate(1 << 20, ElementType.BYTE)) {
			assertThat(gauge(GpuMeterNames.MEMORY_USED)).isEqualTo(before + (1 << 20));
		}
		// The free is ordered on the buffer's stream.
		this.launcher.currentStream().synchronize();
		assertThat(gauge(GpuMeterNames.MEMORY_USED)).isEqualTo(before);
		assertThat(gauge(GpuMeterNames.MEMORY_CACHED)).as("the CPU backend caches no device memory").isZero();
	}

	@Test
	void memoryGaugesAreNaNOnceTheContextIsClosed() {
		this.context.close();
		assertThat(gauge(GpuMeterNames.MEMORY_USED)).isNaN();
		assertThat(gauge(GpuMeterNames.MEMORY_TOTAL)).isNaN();
		assertThat(gauge(GpuMeterNames.MEMORY_CACHED)).isNaN();
	}

	@Test
	void stagingMetersFollowTheCopiesAndTheirBudget() throws Exception {
		int chunk = 64 * 1024;
		java.util.concurrent.CountDownLatch release = new java.util.concurrent.CountDownLatch(1);
		KernelSource gate = KernelSource.named("gate").params(INT).cpu((block, args) -> {
			try {
				release.await(30, TimeUnit.SECONDS);
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
			}
		});
		SimpleMeterRegistry staging = new SimpleMeterRegistry();
		ExecutorService thread = Executors.newSingleThreadExecutor();
		try (GpuContext small = GpuContext.builder().backend(Backend.CPU).cpuThreads(2).copyChunkSize(chunk)
			.stagingBudget(2L * chunk).stagingTimeout(Duration.ofSeconds(3)).open();
				StreamLease held = small.streams().acquire();
				StreamLease other = small.streams().acquire()) {
			new GpuMetrics(small, null).bindTo(staging);
			assertThat(staging.get(GpuMeterNames.STAGING_BUDGET).gauge().value()).isEqualTo(2.0 * chunk);
			assertThat(staging.get(GpuMeterNames.STAGING_BUDGET).gauge().getId().getBaseUnit()).isEqualTo("bytes");
			assertThat(staging.get(GpuMeterNames.STAGING_USED).gauge().value()).isZero();
			DeviceBuffer blocked = small.launcher().callWithStream(held.stream(), () -> small.launcher().allocate(chunk, ElementType.BYTE));
			DeviceBuffer waiting = small.launcher().callWithStream(other.stream(), () -> small.launcher().allocate(chunk, ElementType.BYTE));
			small.launcher().launch(held.stream(), small.launcher().load(gate), LaunchConfig.linear(1, 1), 0);
			blocked.upload(HostArray.of(new byte[chunk]), held.stream());
			blocked.upload(HostArray.of(new byte[chunk]), held.stream());
			assertThat(staging.get(GpuMeterNames.STAGING_USED).gauge().value()).as("two copies behind the gate")
				.isEqualTo(2.0 * chunk);
			Future<?> refused = thread.submit(() -> waiting.upload(HostArray.of(new byte[chunk]), other.stream()));
			awaitTrue(() -> staging.get(GpuMeterNames.STAGING_PENDING).gauge().value() == 1);
			assertThat(refused).failsWithin(Duration.ofSeconds(10))
				.withThrowableOfType(java.util.concurrent.ExecutionException.class)
				.withCauseInstanceOf(dev.gpucompute.StagingExhaustedException.class);
			assertThat(staging.get(GpuMeterNames.STAGING_PENDING).gauge().value()).isZero();
			assertThat(staging.get(GpuMeterNames.STAGING_TIMEOUT).functionCounter().count()).isEqualTo(1);
			release.countDown();
			small.synchronizeDevice();
			awaitTrue(() -> staging.get(GpuMeterNames.STAGING_USED).gauge().value() == 0);
			Tags device = Tags.of("gpu", "0", "backend", "cpu", "uuid", small.device().uuid());
			for (String name : List.of(GpuMeterNames.STAGING_USED, GpuMeterNames.STAGING_BUDGET, GpuMeterNames.STAGING_PENDING,
					GpuMeterNames.STAGING_TIMEOUT)) {
				assertThat(staging.find(name).tags(device).meters()).as(name).hasSize(1);
			}
			small.close();
			assertThat(staging.get(GpuMeterNames.STAGING_USED).gauge().value()).isNaN();
		}
		finally {
			release.countDown();
			thread.shutdownNow();
		}
	}

	@Test
	void unboundListenerRecordsNothingAndLaunchCountersStillSeeEarlierLaunches() {
		MicrometerGpuListener late = new MicrometerGpuListener();
		try (GpuContext other = GpuContext.builder().backend(Backend.CPU).poolSize(1).maxSize(1).listener(late).open()) {
			Kernel kernel = other.launcher().load(ADD_ONE);
			try (DeviceBuffer buffer = other.launcher().upload(HostArray.of(new int[4]));
					StreamLease lease = other.streams().acquire()) {
				other.launcher().launch(kernel, LaunchConfig.linear(4, 4), 4, buffer);
				other.launcher().launch(kernel, LaunchConfig.linear(4, 4), 4, buffer);
				other.launcher().currentStream().synchronize();
			}
			assertThat(late.isBound()).isFalse();
			SimpleMeterRegistry otherRegistry = new SimpleMeterRegistry();
			new GpuMetrics(other, late).bindTo(otherRegistry);
			assertThat(late.isBound()).isTrue();
			assertThat(otherRegistry.get(GpuMeterNames.KERNEL_LAUNCHES).tags("kernel", "add_one", "outcome", "success")
				.functionCounter()
				.count()).isEqualTo(2);
			assertThat(otherRegistry.get(GpuMeterNames.STREAMS_ACQUIRE).timer().count()).isZero();
			try (StreamLease lease = other.streams().acquire()) {
				assertThat(otherRegistry.get(GpuMeterNames.STREAMS_ACQUIRE).timer().count()).isEqualTo(1);
			}
		}
	}

	private void assertPool(int active, int idle, int pending) {
		assertThat(gauge(GpuMeterNames.STREAMS_ACTIVE)).as("active").isEqualTo(active);
		assertThat(gauge(GpuMeterNames.STREAMS_IDLE)).as("idle").isEqualTo(idle);
		assertThat(gauge(GpuMeterNames.STREAMS_PENDING)).as("pending").isEqualTo(pending);
	}

	private double gauge(String name) {
		Gauge gauge = this.registry.get(name).gauge();
		return gauge.value();
	}

	private double launches(String kernel, String outcome) {
		return this.registry.get(GpuMeterNames.KERNEL_LAUNCHES)
			.tags("kernel", kernel, "outcome", outcome)
			.functionCounter()
			.count();
	}

	/** Waits, up to ten seconds, for something that happens on another thread. */
	static void awaitTrue(BooleanSupplier condition) {
		long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
		while (!condition.getAsBoolean()) {
			if (System.nanoTime() > deadline) {
				throw new AssertionError("condition not met within 10 s");
			}
			try {
				Thread.sleep(5);
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
				throw new AssertionError("interrupted", ex);
			}
		}
	}

}
