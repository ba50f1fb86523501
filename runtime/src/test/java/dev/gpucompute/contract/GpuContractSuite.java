package dev.gpucompute.contract;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import dev.gpucompute.ContextClosedException;
import dev.gpucompute.ContextMismatchException;
import dev.gpucompute.DefaultStreamMode;
import dev.gpucompute.DeviceBuffer;
import dev.gpucompute.Dim3;
import dev.gpucompute.ElementType;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuContextBuilder;
import dev.gpucompute.GpuEvent;
import dev.gpucompute.GpuException;
import dev.gpucompute.GpuLauncher;
import dev.gpucompute.GpuStream;
import dev.gpucompute.HostArray;
import dev.gpucompute.InvalidBufferRangeException;
import dev.gpucompute.InvalidLaunchConfigException;
import dev.gpucompute.Kernel;
import dev.gpucompute.KernelNotFoundException;
import dev.gpucompute.KernelSource;
import dev.gpucompute.KernelTiming;
import dev.gpucompute.LaunchConfig;
import dev.gpucompute.ParamType;
import dev.gpucompute.PoolExhaustedException;
import dev.gpucompute.PoolStats;
import dev.gpucompute.PoolTooSmallException;
import dev.gpucompute.StreamKind;
import dev.gpucompute.StreamLease;
import dev.gpucompute.StreamPool;
import dev.gpucompute.StreamPriority;
import dev.gpucompute.StreamScope;

/**
 * The contract every backend passes (docs/runtime.md, "Semantics"). A subclass supplies the backend
 * through {@link #builder()}; the tests use only the public API and kernels that exist for every
 * backend. Concurrency is proven by rendezvous, never by a stopwatch.
 */
public abstract class GpuContractSuite {

	/** Long enough that a missed rendezvous is not a scheduling accident; short enough for CI. */
	private static final int RENDEZVOUS_TIMEOUT_MS = 10_000;

	private static final LaunchConfig ONE = LaunchConfig.of(Dim3.of(1), Dim3.of(1));

	protected GpuContext context;

	protected GpuLauncher launcher;

	protected StreamPool pool;

	private long memoryAtStart;

	/** A builder for the backend under test; the suite adds its own pool sizes. */
	protected abstract GpuContextBuilder builder();

	@BeforeEach
	void open() {
		this.context = builder().poolSize(2).maxSize(8).acquireTimeout(Duration.ofSeconds(10))
			.kernelTiming(KernelTiming.OFF)
			.open();
		this.launcher = this.context.launcher();
		this.pool = this.context.streams();
		this.memoryAtStart = this.context.memory().usedBytes();
	}

	@AfterEach
	void close() {
		if (this.context != null) {
			this.context.close();
		}
	}

	// ---- helpers -----------------------------------------------------------------------------

	private Kernel kernel(dev.gpucompute.KernelSource source) {
		return this.launcher.load(source);
	}

	private int[] read(DeviceBuffer buffer, int n, GpuStream stream) {
		int[] host = new int[n];
		buffer.download(HostArray.of(host), stream).join();
		return host;
	}

	private DeviceBuffer zeros(int ints) {
		DeviceBuffer buffer = this.launcher.allocate(4L * ints, ElementType.BYTE);
		buffer.fill((byte) 0, buffer.stream());
		return buffer;
	}

	/** Nothing held: pool fully idle, no event in use, device memory back to where the test started. */
	protected void assertNothingLeaked() {
		this.context.synchronize();
		PoolStats stats = this.pool.stats();
		assertThat(stats.active()).as("leased streams").isZero();
		assertThat(stats.pending()).as("waiting threads").isZero();
		assertThat(stats.idle()).as("idle streams").isEqualTo(stats.size());
		assertThat(this.context.events().inUse()).as("events in use").isZero();
		assertThat(this.context.memory().usedBytes()).as("device memory in use").isEqualTo(this.memoryAtStart);
	}

	// ---- ordering and concurrency --------------------------------------------------------

	@Test
	void workOnOneStreamRunsInSubmissionOrder() {
		Kernel append = kernel(ContractKernels.APPEND);
		try (StreamLease lease = this.pool.acquire(); DeviceBuffer log = zeros(201)) {
			GpuStream stream = lease.stream();
			stream.waitFor(log.stream());
			for (int id = 0; id < 200; id++) {
				this.launcher.launch(stream, append, ONE, log, id);
			}
			int[] result = read(log, 201, stream);
			assertThat(result[0]).isEqualTo(200);
			for (int id = 0; id < 200; id++) {
				assertThat(result[1 + id]).as("entry %d", id).isEqualTo(id);
			}
		}
		assertNothingLeaked();
	}

	@Test
	void workOnTwoStreamsOverlapsProvenByRendezvous() {
		Kernel rendezvous = kernel(ContractKernels.RENDEZVOUS);
		try (StreamLease a = this.pool.acquire(); StreamLease b = this.pool.acquire();
				DeviceBuffer flags = zeros(2); DeviceBuffer seen = zeros(2)) {
			GpuStream setup = flags.stream();
			a.stream().waitFor(setup);
			b.stream().waitFor(setup);
			this.launcher.launch(a.stream(), rendezvous, ONE, 0, 1, flags, seen, RENDEZVOUS_TIMEOUT_MS);
			this.launcher.launch(b.stream(), rendezvous, ONE, 1, 0, flags, seen, RENDEZVOUS_TIMEOUT_MS);
			a.stream().synchronize();
			b.stream().synchronize();
			assertThat(read(seen, 2, a.stream())).as("each kernel saw the other running").containsExactly(1, 1);
		}
		assertNothingLeaked();
	}

	@Test
	void workOnOneStreamDoesNotOverlap() {
		Kernel rendezvous = kernel(ContractKernels.RENDEZVOUS);
		try (StreamLease a = this.pool.acquire(); DeviceBuffer flags = zeros(2); DeviceBuffer seen = zeros(2)) {
			a.stream().waitFor(flags.stream());
			// The first kernel must give up waiting, because the second can only start after it.
			this.launcher.launch(a.stream(), rendezvous, ONE, 0, 1, flags, seen, 200);
			this.launcher.launch(a.stream(), rendezvous, ONE, 1, 0, flags, seen, 200);
			assertThat(read(seen, 2, a.stream())).containsExactly(0, 1);
		}
		assertNothingLeaked();
	}

	@Test
	void eventOrdersWorkAcrossStreamsWithoutBlockingTheHost() {
		Kernel slow = kernel(ContractKernels.SLEEP_THEN_SET);
		Kernel copy = kernel(ContractKernels.COPY_CELL);
		try (StreamLease a = this.pool.acquire(); StreamLease b = this.pool.acquire();
				DeviceBuffer cells = zeros(2); GpuEvent written = this.context.events().create()) {
			a.stream().waitFor(cells.stream());
			b.stream().waitFor(cells.stream());
			// Long enough that a stalled CI machine cannot finish it before the check below.
			this.launcher.launch(a.stream(), slow, ONE, cells, 0, 7, 1000);
			a.stream().record(written);
			b.stream().waitFor(written);
			assertThat(written.isComplete()).as("host did not wait for the record").isFalse();
			this.launcher.launch(b.stream(), copy, ONE, cells, 0, cells, 1, 2);
			assertThat(read(cells, 2, b.stream())).containsExactly(7, 14);
			assertThat(written.isComplete()).isTrue();
		}
		assertNothingLeaked();
	}

	@Test
	void streamWaitsForAnotherStream() {
		Kernel slow = kernel(ContractKernels.SLEEP_THEN_SET);
		Kernel copy = kernel(ContractKernels.COPY_CELL);
		try (StreamLease a = this.pool.acquire(); StreamLease b = this.pool.acquire(); DeviceBuffer cells = zeros(2)) {
			a.stream().waitFor(cells.stream());
			this.launcher.launch(a.stream(), slow, ONE, cells, 0, 5, 200);
			b.stream().waitFor(a.stream());
			this.launcher.launch(b.stream(), copy, ONE, cells, 0, cells, 1, 3);
			assertThat(read(cells, 2, b.stream())).containsExactly(5, 15);
		}
		assertNothingLeaked();
	}

	@Test
	void waitingOnAnEventNeverRecordedDoesNotWait() {
		Kernel copy = kernel(ContractKernels.COPY_CELL);
		try (StreamLease a = this.pool.acquire(); GpuEvent never = this.context.events().create();
				DeviceBuffer cells = zeros(2)) {
			assertThat(never.isComplete()).isTrue();
			assertThatCode(never::synchronize).doesNotThrowAnyException();
			a.stream().waitFor(cells.stream()).waitFor(never);
			this.launcher.launch(a.stream(), copy, ONE, cells, 0, cells, 1, 1);
			a.stream().synchronize();
			assertThat(a.stream().isIdle()).isTrue();
		}
		assertNothingLeaked();
	}

	@Test
	void perThreadDefaultStreamSynchronizeReallyWaits() {
		assertDefaultStreamSynchronizeWaits(this.context);
	}

	@Test
	void legacyDefaultStreamSynchronizeReallyWaits() {
		try (GpuContext legacy = builder().defaultStream(DefaultStreamMode.LEGACY).kernelTiming(KernelTiming.OFF)
			.open()) {
			assertThat(legacy.defaultStream().kind()).isEqualTo(StreamKind.DEFAULT_LEGACY);
			assertDefaultStreamSynchronizeWaits(legacy);
		}
	}

	private static void assertDefaultStreamSynchronizeWaits(GpuContext context) {
		GpuLauncher launcher = context.launcher();
		Kernel slow = launcher.load(ContractKernels.SLEEP_THEN_SET);
		GpuStream stream = context.defaultStream();
		try (DeviceBuffer cell = launcher.allocate(4, ElementType.BYTE)) {
			launcher.launch(slow, ONE, cell, 0, 1, 1000);
			assertThat(stream.isIdle()).as("the kernel is still running").isFalse();
			stream.synchronize();
			assertThat(stream.isIdle()).as("synchronize returned only after the kernel").isTrue();
			launcher.launch(slow, ONE, cell, 0, 2, 300);
			launcher.synchronize();
			assertThat(stream.isIdle()).isTrue();
		}
	}

	@Test
	void perThreadDefaultStreamsAreDistinctPerThread() throws Exception {
		GpuStream mine = this.context.defaultStream();
		assertThat(mine.kind()).isEqualTo(StreamKind.DEFAULT_PER_THREAD);
		ExecutorService other = Executors.newSingleThreadExecutor();
		try {
			GpuStream theirs = other.submit(() -> this.context.defaultStream()).get();
			assertThat(theirs).isNotSameAs(mine);
			assertThatThrownBy(theirs::synchronize).isInstanceOf(GpuException.class)
				.hasMessageContaining("per-thread default stream");
		}
		finally {
			other.shutdown();
		}
	}

	// ---- current stream --------------------------------------------------------------------

	@Test
	void currentStreamIsThreadLocalUnder32Threads() throws Exception {
		int threads = 32;
		try (GpuContext wide = builder().poolSize(0).maxSize(threads).kernelTiming(KernelTiming.OFF).open()) {
			GpuLauncher launcher = wide.launcher();
			Kernel append = launcher.load(ContractKernels.APPEND);
			CyclicBarrier together = new CyclicBarrier(threads);
			ExecutorService executor = Executors.newFixedThreadPool(threads);
			try {
				List<Future<int[]>> results = new ArrayList<>();
				for (int t = 0; t < threads; t++) {
					int id = t;
					results.add(executor.submit(() -> {
						try (StreamLease lease = wide.streams().acquire();
								StreamScope scope = launcher.useStream(lease.stream())) {
							DeviceBuffer log = launcher.allocate(4 * 11, ElementType.BYTE);
							try {
								log.fill((byte) 0, lease.stream());
								together.await(30, TimeUnit.SECONDS);
								for (int i = 0; i < 10; i++) {
									assertThat(launcher.currentStream()).isSameAs(lease.stream());
									launcher.launch(append, ONE, log, id * 100 + i);
									Thread.yield();
								}
								int[] host = new int[11];
								log.download(HostArray.of(host), launcher.currentStream()).join();
								return host;
							}
							finally {
								log.close();
							}
						}
					}));
				}
				for (int t = 0; t < threads; t++) {
					int[] log = results.get(t).get(60, TimeUnit.SECONDS);
					assertThat(log[0]).isEqualTo(10);
					for (int i = 0; i < 10; i++) {
						assertThat(log[1 + i]).isEqualTo(t * 100 + i);
					}
				}
			}
			finally {
				executor.shutdownNow();
			}
			assertThat(wide.streams().stats().active()).isZero();
		}
	}

	@Test
	void scopedStreamIsRestoredAfterAnException() {
		GpuStream before = this.launcher.currentStream();
		try (StreamLease lease = this.pool.acquire()) {
			assertThatThrownBy(() -> this.launcher.withStream(lease.stream(), () -> {
				assertThat(this.launcher.currentStream()).isSameAs(lease.stream());
				throw new IllegalStateException("boom");
			})).isInstanceOf(IllegalStateException.class).hasMessage("boom");
			assertThat(this.launcher.currentStream()).isSameAs(before);

			assertThatThrownBy(() -> this.launcher.withStream(lease.stream(),
					() -> this.launcher.launch(kernel(ContractKernels.APPEND), ONE, 1)))
				.isInstanceOf(InvalidLaunchConfigException.class);
			assertThat(this.launcher.currentStream()).isSameAs(before);

			try (StreamScope outer = this.launcher.useStream(lease.stream())) {
				try (StreamLease inner = this.pool.acquire(); StreamScope scope = this.launcher.useStream(inner.stream())) {
					assertThat(this.launcher.currentStream()).isSameAs(inner.stream());
				}
				assertThat(this.launcher.currentStream()).isSameAs(lease.stream());
			}
		}
		assertThat(this.launcher.currentStream()).isSameAs(before);
		assertNothingLeaked();
	}

	// ---- stream-parallel groups -----------------------------------------------------------

	@Test
	void parallelGroupForksAfterParentWorkAndJoinsBeforeParentContinues() {
		Kernel slow = kernel(ContractKernels.SLEEP_THEN_SET);
		Kernel copy = kernel(ContractKernels.COPY_CELL);
		Kernel sum = kernel(ContractKernels.SUM_CELLS);
		int branches = 3;
		try (StreamLease parentLease = this.pool.acquire();
				StreamScope scope = this.launcher.useStream(parentLease.stream());
				DeviceBuffer source = this.launcher.allocate(4, ElementType.BYTE);
				DeviceBuffer partial = this.launcher.allocate(4L * branches, ElementType.BYTE);
				DeviceBuffer total = this.launcher.allocate(4, ElementType.BYTE)) {
			GpuStream parent = parentLease.stream();
			partial.fill((byte) 0, parent);
			// Parent work the branches must wait for (fork).
			this.launcher.launch(slow, ONE, source, 0, 10, 200);
			List<Consumer<GpuStream>> work = new ArrayList<>();
			List<GpuStream> used = new ArrayList<>();
			for (int i = 0; i < branches; i++) {
				int index = i;
				work.add((stream) -> {
					used.add(stream);
					assertThat(this.launcher.currentStream()).isSameAs(stream);
					// Slow branch work the parent must wait for (join).
					this.launcher.launch(slow, ONE, partial, index, -1, 100 * (index + 1));
					this.launcher.launch(copy, ONE, source, 0, partial, index, index + 1);
				});
			}
			this.launcher.parallel(work);
			assertThat(this.launcher.currentStream()).isSameAs(parent);
			assertThat(used).doesNotHaveDuplicates().doesNotContain(parent);
			this.launcher.launch(sum, ONE, branches, partial, total);
			assertThat(read(partial, branches, parent)).containsExactly(10, 20, 30);
			assertThat(read(total, 1, parent)).containsExactly(60);
		}
		assertNothingLeaked();
	}

	@Test
	void parallelGroupBranchesOverlap() {
		Kernel rendezvous = kernel(ContractKernels.RENDEZVOUS);
		try (DeviceBuffer flags = zeros(2); DeviceBuffer seen = zeros(2)) {
			this.launcher.parallel(
					() -> this.launcher.launch(rendezvous, ONE, 0, 1, flags, seen, RENDEZVOUS_TIMEOUT_MS),
					() -> this.launcher.launch(rendezvous, ONE, 1, 0, flags, seen, RENDEZVOUS_TIMEOUT_MS));
			assertThat(read(seen, 2, this.launcher.currentStream())).containsExactly(1, 1);
		}
		assertNothingLeaked();
	}

	@Test
	void parallelGroupReleasesEveryStreamWhenABranchThrows() {
		Kernel append = kernel(ContractKernels.APPEND);
		GpuStream before = this.launcher.currentStream();
		AtomicInteger ran = new AtomicInteger();
		try (DeviceBuffer log = zeros(4)) {
			assertThatThrownBy(() -> this.launcher.parallel(
					() -> { ran.incrementAndGet(); this.launcher.launch(append, ONE, log, 1); },
					() -> { ran.incrementAndGet(); throw new IllegalStateException("branch failed"); },
					() -> ran.incrementAndGet()))
				.isInstanceOf(IllegalStateException.class).hasMessage("branch failed");
			assertThat(ran).as("branches after the failing one are skipped").hasValue(2);
			assertThat(this.launcher.currentStream()).isSameAs(before);
			assertThat(this.pool.stats().active()).isZero();
			// The parent still joined the first branch's work.
			assertThat(read(log, 2, before)).containsExactly(1, 1);
		}
		assertNothingLeaked();
	}

	@Test
	void nestedParallelGroupsAreRejected() {
		assertThatThrownBy(() -> this.launcher.parallel(() -> this.launcher.parallel(() -> {
		}))).isInstanceOf(GpuException.class).hasMessageContaining("cannot be nested");
		assertThat(this.pool.stats().active()).isZero();
		assertNothingLeaked();
	}

	// ---- pool ------------------------------------------------------------------------------

	@Test
	void poolIsBoundedAndTimesOut() {
		List<StreamLease> leases = new ArrayList<>();
		try {
			for (int i = 0; i < 8; i++) {
				leases.add(this.pool.acquire(Duration.ZERO));
			}
			PoolStats full = this.pool.stats();
			assertThat(full.size()).isEqualTo(8);
			assertThat(full.active()).isEqualTo(8);
			assertThat(full.created()).isEqualTo(8);
			assertThatThrownBy(() -> this.pool.acquire(Duration.ofMillis(50)))
				.isInstanceOf(PoolExhaustedException.class)
				.hasMessageContaining("no stream free after 50 ms")
				.hasMessageContaining("max 8");
			assertThat(this.pool.stats().timeouts()).isEqualTo(1);
			assertThat(this.pool.stats().highWaterMark()).isEqualTo(8);
		}
		finally {
			leases.forEach(StreamLease::close);
		}
		assertNothingLeaked();
	}

	@Test
	void poolReusesStreams() {
		String first;
		try (StreamLease lease = this.pool.acquire()) {
			first = lease.stream().name();
		}
		try (StreamLease lease = this.pool.acquire()) {
			assertThat(lease.stream().name()).as("last returned, first handed out").isEqualTo(first);
		}
		for (int i = 0; i < 100; i++) {
			try (StreamLease lease = this.pool.acquire()) {
				assertThat(lease.stream().kind()).isEqualTo(StreamKind.POOLED);
			}
		}
		PoolStats stats = this.pool.stats();
		assertThat(stats.created()).isEqualTo(2);
		assertThat(stats.acquisitions()).isEqualTo(102);
		assertNothingLeaked();
	}

	@Test
	void waiterGetsTheStreamReleasedByAnotherThread() throws Exception {
		List<StreamLease> leases = new ArrayList<>();
		for (int i = 0; i < 8; i++) {
			leases.add(this.pool.acquire());
		}
		ExecutorService executor = Executors.newSingleThreadExecutor();
		try {
			Future<String> waiter = executor.submit(() -> {
				try (StreamLease lease = this.pool.acquire(Duration.ofSeconds(20))) {
					return lease.stream().name();
				}
			});
			while (this.pool.stats().pending() == 0) {
				Thread.onSpinWait();
			}
			String released = leases.get(3).stream().name();
			leases.get(3).close();
			assertThat(waiter.get(20, TimeUnit.SECONDS)).isEqualTo(released);
		}
		finally {
			executor.shutdownNow();
			leases.forEach(StreamLease::close);
		}
		assertNothingLeaked();
	}

	@Test
	void leasesAreExclusiveUnderContention() throws Exception {
		int threads = 16;
		Map<String, Thread> holders = new ConcurrentHashMap<>();
		AtomicInteger violations = new AtomicInteger();
		CountDownLatch start = new CountDownLatch(1);
		ExecutorService executor = Executors.newFixedThreadPool(threads);
		try {
			List<Future<?>> done = new ArrayList<>();
			for (int t = 0; t < threads; t++) {
				done.add(executor.submit(() -> {
					start.await();
					for (int i = 0; i < 300; i++) {
						try (StreamLease lease = this.pool.acquire(Duration.ofSeconds(30))) {
							String name = lease.stream().name();
							if (holders.putIfAbsent(name, Thread.currentThread()) != null) {
								violations.incrementAndGet();
							}
							Thread.yield();
							holders.remove(name);
						}
					}
					return null;
				}));
			}
			start.countDown();
			for (Future<?> future : done) {
				future.get(120, TimeUnit.SECONDS);
			}
		}
		finally {
			executor.shutdownNow();
		}
		assertThat(violations).as("a stream held by two leases at once").hasValue(0);
		PoolStats stats = this.pool.stats();
		assertThat(stats.size()).isLessThanOrEqualTo(8);
		assertThat(stats.acquisitions()).isEqualTo(threads * 300L);
		assertThat(stats.highWaterMark()).isLessThanOrEqualTo(8);
		assertNothingLeaked();
	}

	@Test
	void groupAcquisitionTakesAllOrNothing() throws Exception {
		List<StreamLease> held = new ArrayList<>();
		for (int i = 0; i < 6; i++) {
			held.add(this.pool.acquire());
		}
		assertThatThrownBy(() -> this.pool.acquireAll(StreamPriority.NORMAL, 3, Duration.ofMillis(50)))
			.isInstanceOf(PoolExhaustedException.class);
		assertThat(this.pool.stats().active()).as("a failed group takes nothing").isEqualTo(6);
		assertThatThrownBy(() -> this.pool.acquireAll(StreamPriority.NORMAL, 9, Duration.ZERO))
			.isInstanceOf(PoolTooSmallException.class).hasMessageContaining("never holds more than 8");
		assertThat(this.pool.stats().active()).as("a group the pool can never lease takes nothing").isEqualTo(6);
		ExecutorService executor = Executors.newSingleThreadExecutor();
		try {
			Future<Integer> group = executor.submit(() -> {
				List<StreamLease> leases = this.pool.acquireAll(StreamPriority.NORMAL, 3, Duration.ofSeconds(20));
				int distinct = (int) leases.stream().map((lease) -> lease.stream().name()).distinct().count();
				leases.forEach(StreamLease::close);
				return distinct;
			});
			while (this.pool.stats().pending() == 0) {
				Thread.onSpinWait();
			}
			held.remove(0).close();
			assertThat(group.get(20, TimeUnit.SECONDS)).isEqualTo(3);
		}
		finally {
			executor.shutdownNow();
			held.forEach(StreamLease::close);
		}
		assertNothingLeaked();
	}

	@Test
	void concurrentParallelGroupsDoNotStarveEachOther() throws Exception {
		// Groups of 5 on a pool of 8: leasing stream by stream could leave two groups holding 4 each,
		// both waiting for the other's streams until they time out.
		try (GpuContext small = builder().poolSize(0).maxSize(8).acquireTimeout(Duration.ofSeconds(5))
			.kernelTiming(KernelTiming.OFF).open()) {
			GpuLauncher groups = small.launcher();
			int threads = 4;
			CyclicBarrier together = new CyclicBarrier(threads);
			ExecutorService executor = Executors.newFixedThreadPool(threads);
			try {
				List<Future<?>> done = new ArrayList<>();
				for (int t = 0; t < threads; t++) {
					done.add(executor.submit(() -> {
						for (int round = 0; round < 20; round++) {
							together.await(30, TimeUnit.SECONDS);
							List<Consumer<GpuStream>> branches = new ArrayList<>();
							for (int b = 0; b < 5; b++) {
								branches.add((stream) -> Thread.yield());
							}
							groups.parallel(branches);
						}
						return null;
					}));
				}
				for (Future<?> future : done) {
					future.get(120, TimeUnit.SECONDS);
				}
			}
			finally {
				executor.shutdownNow();
			}
			assertThat(small.streams().stats().timeouts()).isZero();
			assertThat(small.streams().stats().active()).isZero();
		}
	}

	@Test
	void closingALeaseTwiceReturnsTheStreamOnce() {
		StreamLease lease = this.pool.acquire();
		lease.close();
		lease.close();
		PoolStats stats = this.pool.stats();
		assertThat(stats.idle()).isEqualTo(stats.size());
		assertThat(stats.active()).isZero();
		try (StreamLease a = this.pool.acquire(); StreamLease b = this.pool.acquire()) {
			assertThat(a.stream().name()).isNotEqualTo(b.stream().name());
		}
		assertThatThrownBy(() -> lease.stream().synchronize()).isInstanceOf(GpuException.class)
			.hasMessageContaining("after its lease was closed");
		assertNothingLeaked();
	}

	@Test
	void closingALeaseFromManyThreadsAtOnceReturnsTheStreamOnce() throws Exception {
		int threads = 8;
		ExecutorService executor = Executors.newFixedThreadPool(threads);
		try {
			for (int round = 0; round < 200; round++) {
				StreamLease lease = this.pool.acquire();
				CyclicBarrier start = new CyclicBarrier(threads);
				List<Future<?>> closes = new ArrayList<>();
				for (int t = 0; t < threads; t++) {
					closes.add(executor.submit(() -> {
						start.await();
						lease.close();
						return null;
					}));
				}
				for (Future<?> close : closes) {
					close.get(10, TimeUnit.SECONDS);
				}
				assertThat(lease.isClosed()).isTrue();
				PoolStats stats = this.pool.stats();
				assertThat(stats.active()).as("round %d", round).isZero();
				assertThat(stats.idle()).as("round %d", round).isEqualTo(stats.size());
			}
		}
		finally {
			executor.shutdownNow();
		}
		PoolStats stats = this.pool.stats();
		assertThat(stats.streams().stream().mapToLong(PoolStats.StreamStats::leases).sum())
			.isEqualTo(stats.acquisitions());
		assertNothingLeaked();
	}

	@Test
	void priorityStreamsAreLeasedWithinTheSameBound() {
		try (StreamLease high = this.pool.acquire(StreamPriority.HIGH); StreamLease normal = this.pool.acquire()) {
			assertThat(high.stream().priority()).isEqualTo(StreamPriority.HIGH);
			assertThat(normal.stream().priority()).isEqualTo(StreamPriority.NORMAL);
		}
		assertThat(this.pool.stats().size()).isLessThanOrEqualTo(8);
		assertNothingLeaked();
	}

	@Test
	void leakDetectionReportsALeaseHeldPastTheThreshold() throws Exception {
		try (GpuContext watched = builder().leakDetectionThreshold(Duration.ofMillis(50))
			.kernelTiming(KernelTiming.OFF)
			.open()) {
			try (StreamLease lease = watched.streams().acquire()) {
				long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
				while (watched.streams().stats().leaksDetected() == 0 && System.nanoTime() < deadline) {
					Thread.sleep(10);
				}
				assertThat(watched.streams().stats().leaksDetected()).isEqualTo(1);
			}
			try (StreamLease quick = watched.streams().acquire()) {
				assertThat(quick.isClosed()).isFalse();
			}
			Thread.sleep(150);
			assertThat(watched.streams().stats().leaksDetected()).as("a lease returned in time is not reported")
				.isEqualTo(1);
		}
	}

	// ---- shutdown and use after close ---------------------------------------------------------

	@Test
	void closeDrainsWorkInFlightThenDestroysEverything() {
		Kernel slow = kernel(ContractKernels.SLEEP_THEN_SET);
		List<java.util.concurrent.CompletableFuture<Void>> completions = new ArrayList<>();
		StreamLease held = this.pool.acquire();
		GpuEvent event = this.context.events().create();
		DeviceBuffer cells = zeros(4);
		held.stream().waitFor(cells.stream());
		for (int i = 0; i < 3; i++) {
			try (StreamLease lease = this.pool.acquire()) {
				lease.stream().waitFor(cells.stream());
				this.launcher.launch(lease.stream(), slow, ONE, cells, i, i + 1, 300);
				completions.add(lease.stream().completion());
			}
		}
		this.launcher.launch(held.stream(), slow, ONE, cells, 3, 4, 300);
		held.stream().record(event);
		completions.add(held.stream().completion());

		this.context.close();

		for (var completion : completions) {
			assertThat(completion).as("work in flight finished before close returned").isCompleted()
				.isNotCompletedExceptionally();
		}
		PoolStats stats = this.pool.stats();
		assertThat(stats.size()).isZero();
		assertThat(stats.destroyed()).isEqualTo(stats.created());
		assertThat(this.context.events().live()).isZero();
		assertThat(this.context.isHealthy()).isFalse();
		assertThat(this.context.healthProblem()).contains("closed");

		// Stale handles: use raises, close is harmless.
		assertThatThrownBy(() -> held.stream().synchronize()).isInstanceOf(ContextClosedException.class);
		assertThatThrownBy(() -> event.record(held.stream())).isInstanceOf(ContextClosedException.class);
		assertThatThrownBy(() -> cells.download(HostArray.of(new int[4]), held.stream())).isInstanceOf(ContextClosedException.class);
		assertThatThrownBy(() -> this.launcher.launch(slow, ONE, cells, 0, 1, 1))
			.isInstanceOf(ContextClosedException.class);
		assertThatThrownBy(() -> this.pool.acquire()).isInstanceOf(ContextClosedException.class);
		assertThatThrownBy(() -> this.context.events().create()).isInstanceOf(ContextClosedException.class);
		assertThatCode(() -> {
			held.close();
			event.close();
			cells.close();
			this.context.close();
		}).doesNotThrowAnyException();
	}

	@Test
	void drainStopsNewLeasesButLetsHeldOnesFinish() {
		Kernel slow = kernel(ContractKernels.SLEEP_THEN_SET);
		try (StreamLease held = this.pool.acquire(); DeviceBuffer cell = zeros(1)) {
			held.stream().waitFor(cell.stream());
			this.launcher.launch(held.stream(), slow, ONE, cell, 0, 3, 200);
			assertThat(this.context.drain(Duration.ofSeconds(30))).isTrue();
			assertThat(held.stream().isIdle()).as("drain waited for the work in flight").isTrue();
			assertThatThrownBy(() -> this.pool.acquire()).isInstanceOf(ContextClosedException.class);
			this.launcher.launch(held.stream(), slow, ONE, cell, 0, 4, 1);
			assertThat(read(cell, 1, held.stream())).containsExactly(4);
		}
		this.context.close();
		assertThat(this.pool.stats().size()).isZero();
		assertThat(this.context.events().live()).isZero();
	}

	@Test
	void handlesAreNeverRoutedToAnotherContext() {
		try (GpuContext other = builder().kernelTiming(KernelTiming.OFF).open();
				StreamLease foreign = other.streams().acquire();
				DeviceBuffer foreignBuffer = other.launcher().allocate(16, ElementType.BYTE)) {
			Kernel append = kernel(ContractKernels.APPEND);
			assertThatThrownBy(() -> this.launcher.launch(foreign.stream(), append, ONE, foreignBuffer, 1))
				.isInstanceOf(ContextMismatchException.class).hasMessageContaining("another GPU context");
			try (DeviceBuffer mine = zeros(4)) {
				assertThatThrownBy(() -> this.launcher.launch(append, ONE, foreignBuffer, 1))
					.isInstanceOf(ContextMismatchException.class).hasMessageContaining("another GPU context");
				assertThatThrownBy(() -> mine.download(HostArray.of(new int[4]), foreign.stream()))
					.isInstanceOf(ContextMismatchException.class);
			}
		}
		assertNothingLeaked();
	}

	// ---- bad input -------------------------------------------------------------------------------

	@Test
	void zeroOrNegativeDimensionsAreRejected() {
		assertThatThrownBy(() -> LaunchConfig.of(Dim3.of(1), Dim3.of(0))).isInstanceOf(InvalidLaunchConfigException.class)
			.hasMessageContaining("at least 1 thread");
		assertThatThrownBy(() -> Dim3.of(4, -1)).isInstanceOf(InvalidLaunchConfigException.class)
			.hasMessageContaining("4x-1x1");
		assertThatThrownBy(() -> LaunchConfig.linear(-1, 256)).isInstanceOf(InvalidLaunchConfigException.class);
		assertThatThrownBy(() -> LaunchConfig.linear(100, 0)).isInstanceOf(InvalidLaunchConfigException.class);
		assertThatThrownBy(() -> ONE.withSharedMemory(-1)).isInstanceOf(InvalidLaunchConfigException.class);
		assertNothingLeaked();
	}

	@Test
	void launchLimitsOfTheDeviceAreCheckedBeforeTheDriver() {
		Kernel saxpy = kernel(ContractKernels.SAXPY);
		int maxThreads = this.context.device().maxThreadsPerBlock();
		try (DeviceBuffer x = this.launcher.allocate(4096, ElementType.BYTE); DeviceBuffer y = this.launcher.allocate(4096, ElementType.BYTE)) {
			assertThatThrownBy(() -> this.launcher.launch(saxpy, LaunchConfig.of(Dim3.of(1), Dim3.of(maxThreads + 1)),
					1024, 1f, x, y))
				.isInstanceOf(InvalidLaunchConfigException.class)
				.hasMessageContaining("'saxpy'")
				.hasMessageContaining(maxThreads + " threads per block");
			assertThatThrownBy(() -> this.launcher.launch(saxpy, LaunchConfig.of(Dim3.of(1), Dim3.of(32, 32, 2)),
					1024, 1f, x, y))
				.isInstanceOf(InvalidLaunchConfigException.class);
			assertThatThrownBy(() -> this.launcher.launch(saxpy,
					ONE.withSharedMemory(this.context.device().maxSharedMemoryPerBlock() + 1), 1024, 1f, x, y))
				.isInstanceOf(InvalidLaunchConfigException.class).hasMessageContaining("shared memory");
			assertThat(saxpy.stats().launches()).isZero();
		}
		assertNothingLeaked();
	}

	@Test
	void wrongArgumentCountTypeOrNullIsRejected() {
		Kernel saxpy = kernel(ContractKernels.SAXPY);
		LaunchConfig config = LaunchConfig.linear(1024, 256);
		try (DeviceBuffer x = this.launcher.allocate(4096, ElementType.BYTE); DeviceBuffer y = this.launcher.allocate(4096, ElementType.BYTE)) {
			assertThatThrownBy(() -> this.launcher.launch(saxpy, config, 1024, 1f, x))
				.isInstanceOf(InvalidLaunchConfigException.class)
				.hasMessageContaining("'saxpy' takes 4 arguments [INT, FLOAT, BUFFER, BUFFER], got 3");
			assertThatThrownBy(() -> this.launcher.launch(saxpy, config, 1024, 1.0, x, y))
				.isInstanceOf(InvalidLaunchConfigException.class)
				.hasMessageContaining("Argument 1 of kernel 'saxpy' must be FLOAT (Float), got Double 1.0");
			assertThatThrownBy(() -> this.launcher.launch(saxpy, config, 1024, 1f, x, "y"))
				.isInstanceOf(InvalidLaunchConfigException.class).hasMessageContaining("must be BUFFER");
			assertThatThrownBy(() -> this.launcher.launch(saxpy, config, 1024, 1f, null, y))
				.isInstanceOf(InvalidLaunchConfigException.class)
				.hasMessageContaining("Argument 2 of kernel 'saxpy' (BUFFER) is null");
			assertThatThrownBy(() -> this.launcher.launch(saxpy, config, (Object[]) null))
				.isInstanceOf(InvalidLaunchConfigException.class).hasMessageContaining("null argument array");
			assertThatThrownBy(() -> this.launcher.launch(saxpy, null, 1024, 1f, x, y))
				.isInstanceOf(InvalidLaunchConfigException.class).hasMessageContaining("launch configuration");
			DeviceBuffer closed = this.launcher.allocate(16, ElementType.BYTE);
			closed.close();
			assertThatThrownBy(() -> this.launcher.launch(saxpy, config, 4, 1f, closed, y))
				.isInstanceOf(GpuException.class).hasMessageContaining("used after it was closed");
			assertThat(saxpy.stats().launches()).isZero();
		}
		assertNothingLeaked();
	}

	@Test
	void unknownKernelNameIsRejected() {
		kernel(ContractKernels.APPEND);
		assertThatThrownBy(() -> this.launcher.kernel("apend")).isInstanceOf(KernelNotFoundException.class)
			.hasMessageContaining("'apend'")
			.hasMessageContaining("append");
		assertNothingLeaked();
	}

	@Test
	void aDifferentKernelUnderALoadedNameIsRejected() {
		kernel(ContractKernels.APPEND);
		assertThat(kernel(ContractKernels.APPEND)).isSameAs(this.launcher.kernel("append"));
		assertThatThrownBy(() -> kernel(dev.gpucompute.KernelSource.named("append")
			.params(dev.gpucompute.ParamType.INT)
			.cuda("extern \"C\" __global__ void append(int x) {}"))).isInstanceOf(GpuException.class)
			.hasMessageContaining("already loaded");
	}

	@Test
	void copiesOutsideTheBufferAreRejected() {
		try (DeviceBuffer small = this.launcher.allocate(16, ElementType.BYTE)) {
			GpuStream stream = small.stream();
			assertThatThrownBy(() -> small.upload(HostArray.of(new float[5]), stream)).isInstanceOf(InvalidBufferRangeException.class)
				.hasMessageContaining("20 bytes")
				.hasMessageContaining("16 bytes");
			assertThatThrownBy(() -> small.download(HostArray.of(new int[5]), stream)).isInstanceOf(InvalidBufferRangeException.class);
			assertThatThrownBy(() -> small.upload(HostArray.of(new float[2]), 3, stream))
				.isInstanceOf(InvalidBufferRangeException.class);
			assertThatThrownBy(() -> small.upload((HostArray) null, stream)).isInstanceOf(NullPointerException.class);
			assertThatThrownBy(() -> this.launcher.allocate(-1, ElementType.BYTE)).isInstanceOf(InvalidBufferRangeException.class);
		}
		assertNothingLeaked();
	}

	@Test
	void elapsedTimeNeedsRecordedTimingEvents() {
		Kernel slow = kernel(ContractKernels.SLEEP_THEN_SET);
		try (GpuEvent start = this.context.events().createTiming(); GpuEvent end = this.context.events().createTiming();
				GpuEvent plain = this.context.events().create(); StreamLease lease = this.pool.acquire();
				DeviceBuffer cell = this.launcher.allocate(4, ElementType.BYTE)) {
			assertThatThrownBy(() -> end.elapsedSince(start)).isInstanceOf(GpuException.class)
				.hasMessageContaining("never recorded");
			lease.stream().waitFor(cell.stream());
			lease.stream().record(start);
			this.launcher.launch(lease.stream(), slow, ONE, cell, 0, 1, 50);
			lease.stream().record(end);
			lease.stream().record(plain);
			assertThat(end.elapsedSince(start)).isGreaterThan(Duration.ZERO);
			assertThatThrownBy(() -> plain.elapsedSince(start)).isInstanceOf(GpuException.class)
				.hasMessageContaining("timing events");
		}
		assertNothingLeaked();
	}

	@Test
	void aNewEventIsCompleteEvenWhenTheRegistryRecyclesABusyOne() {
		Kernel slow = kernel(ContractKernels.SLEEP_THEN_SET);
		// Loaded before a's kernel starts: on CUDA a module load waits for the work in flight, so a load
		// inside the loop returned only after a's 1 s kernel and the check below failed (issue 29).
		Kernel copy = kernel(ContractKernels.COPY_CELL);
		try (StreamLease a = this.pool.acquire(); StreamLease b = this.pool.acquire(); DeviceBuffer cell = zeros(1)) {
			a.stream().waitFor(cell.stream());
			this.launcher.launch(a.stream(), slow, ONE, cell, 0, 1, 1000);
			// The wait takes an internal event, records it on a's busy stream and hands it back at once.
			b.stream().waitFor(a.stream());
			for (int i = 0; i < 4; i++) {
				try (GpuEvent fresh = this.context.events().create()) {
					assertThat(fresh.isRecorded()).isFalse();
					assertThat(fresh.isComplete()).as("an event never recorded is complete").isTrue();
					fresh.synchronize();
					assertThat(a.stream().isIdle()).as("synchronising it did not wait for a's 1 s kernel").isFalse();
					this.launcher.launch(b.stream(), copy, ONE, cell, 0, cell, 0, 1);
					b.stream().waitFor(fresh);
				}
			}
			assertThat(read(cell, 1, b.stream())).containsExactly(1);
		}
		assertNothingLeaked();
	}

	@Test
	void eventsAreRecycledAndCountedBackToZero() {
		int createdBefore = (int) this.context.events().stats().created();
		for (int i = 0; i < 50; i++) {
			try (StreamLease lease = this.pool.acquire(); GpuEvent event = this.context.events().create()) {
				lease.stream().record(event);
				event.synchronize();
			}
		}
		assertThat(this.context.events().stats().created() - createdBefore).as("recycled, not created anew")
			.isLessThanOrEqualTo(1);
		GpuEvent closedTwice = this.context.events().create();
		closedTwice.close();
		closedTwice.close();
		assertThatThrownBy(closedTwice::synchronize).isInstanceOf(GpuException.class)
			.hasMessageContaining("after it was closed");
		assertNothingLeaked();
	}

	// ---- data path --------------------------------------------------------------------------

	@Test
	void saxpyMatchesAJavaReference() {
		Kernel saxpy = kernel(ContractKernels.SAXPY);
		int n = 100_003;
		float[] x = new float[n];
		float[] y = new float[n];
		java.util.Random random = new java.util.Random(42);
		for (int i = 0; i < n; i++) {
			x[i] = random.nextFloat();
			y[i] = random.nextFloat();
		}
		float[] result = new float[n];
		try (StreamLease lease = this.pool.acquire(); StreamScope scope = this.launcher.useStream(lease.stream());
				DeviceBuffer dx = this.launcher.upload(HostArray.of(x)); DeviceBuffer dy = this.launcher.upload(HostArray.of(y))) {
			this.launcher.launch(saxpy, LaunchConfig.linear(n, 256), n, 2.5f, dx, dy);
			dy.download(HostArray.of(result), lease.stream()).join();
		}
		for (int i = 0; i < n; i++) {
			assertThat(result[i]).isEqualTo(2.5f * x[i] + y[i], org.assertj.core.data.Offset.offset(1e-5f));
		}
		assertThat(this.launcher.kernel("saxpy").stats().launches()).isEqualTo(1);
		assertNothingLeaked();
	}

	@Test
	void firstUseOnAnotherStreamWaitsForTheOwningStream() {
		Kernel slow = kernel(ContractKernels.SLEEP_THEN_SET);
		Kernel copy = kernel(ContractKernels.COPY_CELL);
		try (StreamLease a = this.pool.acquire(); StreamLease b = this.pool.acquire()) {
			DeviceBuffer cell = this.launcher.callWithStream(a.stream(), () -> this.launcher.allocate(4, ElementType.BYTE));
			DeviceBuffer out = this.launcher.callWithStream(b.stream(), () -> this.launcher.allocate(4, ElementType.BYTE));
			try {
				assertThat(cell.stream()).isSameAs(a.stream());
				this.launcher.launch(a.stream(), slow, ONE, cell, 0, 11, 200);
				// No explicit wait: the first use of cell on b is ordered after a's work so far.
				this.launcher.launch(b.stream(), copy, ONE, cell, 0, out, 0, 1);
				assertThat(read(out, 1, b.stream())).containsExactly(11);
			}
			finally {
				cell.close();
				out.close();
			}
		}
		assertNothingLeaked();
	}

	@Test
	void bufferUsedOnAnotherStreamIsFreedOnlyAfterThatUse() {
		Kernel slow = kernel(ContractKernels.SLEEP_THEN_SET);
		Kernel copy = kernel(ContractKernels.COPY_CELL);
		try (StreamLease other = this.pool.acquire(); DeviceBuffer keep = zeros(1)) {
			DeviceBuffer temp = zeros(1);
			other.stream().waitFor(temp.stream());
			// Slow use on another stream, then close right away: the free must wait for it.
			this.launcher.launch(other.stream(), slow, ONE, temp, 0, 9, 200);
			this.launcher.launch(other.stream(), copy, ONE, temp, 0, keep, 0, 1);
			temp.close();
			assertThat(read(keep, 1, other.stream())).containsExactly(9);
		}
		assertNothingLeaked();
	}

}
