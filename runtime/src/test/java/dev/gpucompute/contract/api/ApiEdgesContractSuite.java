package dev.gpucompute.contract.api;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import dev.gpucompute.Backend;
import dev.gpucompute.DeviceBuffer;
import dev.gpucompute.Dim3;
import dev.gpucompute.ElementType;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuContextBuilder;
import dev.gpucompute.GpuLauncher;
import dev.gpucompute.GpuStream;
import dev.gpucompute.HostArray;
import dev.gpucompute.HostBuffer;
import dev.gpucompute.InvalidKernelArgumentException;
import dev.gpucompute.InvalidLaunchConfigException;
import dev.gpucompute.Kernel;
import dev.gpucompute.KernelSource;
import dev.gpucompute.LaunchConfig;
import dev.gpucompute.ParamType;
import dev.gpucompute.StreamLease;
import dev.gpucompute.StreamPool;
import dev.gpucompute.StreamPool.PoolStats;
import dev.gpucompute.StreamPool.StreamLeases;
import dev.gpucompute.StreamPriority;
import dev.gpucompute.StreamScope;
import dev.gpucompute.UnsupportedBackendOperationException;
import dev.gpucompute.contract.ContractKernels;
import dev.gpucompute.listener.GpuListener;
import dev.gpucompute.settings.KernelTiming;

/**
 * The API's conveniences and edge cases, on every backend: copies on the current stream,
 * element-typed allocation, zero-length buffers, empty launches, lease groups, the upload and
 * download overloads, the argument error type and native handles. A subclass supplies the backend.
 */
public abstract class ApiEdgesContractSuite {

	private static final LaunchConfig ONE = LaunchConfig.of(Dim3.of(1), Dim3.of(1));

	private final List<String> launches = new CopyOnWriteArrayList<>();

	protected GpuContext context;

	private GpuLauncher launcher;

	private StreamPool pool;

	private long memoryAtStart;

	/** A builder for the backend under test; the suite adds its pool sizes and a listener. */
	protected abstract GpuContextBuilder builder();

	@BeforeEach
	void open() {
		this.context = builder().poolSize(2).maxSize(8).acquireTimeout(Duration.ofSeconds(10))
			.kernelTiming(KernelTiming.OFF)
			.listener(new GpuListener() {
				@Override
				public void kernelLaunched(String kernel, boolean success) {
					ApiEdgesContractSuite.this.launches.add(kernel + ":" + success);
				}
			})
			.open();
		this.launcher = this.context.launcher();
		this.pool = this.context.streams();
		this.memoryAtStart = this.context.memory().usedBytes();
	}

	@AfterEach
	void close() {
		this.context.close();
	}

	private void assertNothingLeaked() {
		this.context.synchronizeDevice();
		PoolStats stats = this.pool.stats();
		assertThat(stats.active()).as("leased streams").isZero();
		assertThat(stats.idle()).as("idle streams").isEqualTo(stats.size());
		assertThat(this.context.events().inUse()).as("events in use").isZero();
		assertThat(this.context.memory().usedBytes()).as("device memory in use").isEqualTo(this.memoryAtStart);
	}

	// ---- copies on the current stream ------------------------------------------------------------

	@Test
	void copiesWithoutAStreamGoToTheScopesStream() {
		Kernel slow = this.launcher.load(ContractKernels.SLEEP_THEN_SET);
		// Owned by the default stream and already used on the lease's: a download on the default stream
		// would not wait for the lease's kernel below, and would read zeros.
		try (StreamLease lease = this.pool.acquire(); DeviceBuffer cells = this.launcher.upload(HostArray.of(new int[] { 0, 0 }))) {
			assertThat(cells.stream()).isSameAs(this.context.defaultStream());
			cells.fill((byte) 0, lease.stream());
			try (StreamScope scope = this.launcher.useStream(lease.stream())) {
				this.launcher.launch(slow, ONE, cells, 1, 42, 300);
				int[] host = new int[2];
				cells.download(HostArray.of(host)).join();
				assertThat(host).containsExactly(0, 42);
				this.launcher.launch(slow, ONE, cells, 0, 5, 300);
				cells.upload(HostArray.of(new int[] { 7 })); // after the kernel on the same stream, so it wins
				cells.download(HostArray.of(host)).join();
				assertThat(host).containsExactly(7, 42);
			}
		}
		assertNothingLeaked();
	}

	@Test
	void hostBufferCopiesWithoutAStreamGoToTheScopesStream() {
		Kernel slow = this.launcher.load(ContractKernels.SLEEP_THEN_SET);
		try (StreamLease lease = this.pool.acquire(); HostBuffer host = this.launcher.allocateHost(2 * Integer.BYTES);
				DeviceBuffer cells = this.launcher.upload(HostArray.of(new int[] { 0, 0 }))) {
			cells.fill((byte) 0, lease.stream());
			try (StreamScope scope = this.launcher.useStream(lease.stream())) {
				this.launcher.launch(slow, ONE, cells, 1, 42, 300);
				// On the default stream this download would not wait for the kernel and would read zeros.
				cells.download(host).join();
				int[] out = new int[2];
				host.get(0, HostArray.of(out));
				assertThat(out).containsExactly(0, 42);
				host.put(0, HostArray.of(new int[] { 7, 8 }));
				try (DeviceBuffer copy = this.launcher.upload(host)) {
					assertThat(copy.stream()).as("allocated on the scope's stream").isSameAs(lease.stream());
					assertThat(copy.byteSize()).isEqualTo(host.byteSize());
					int[] back = new int[2];
					copy.download(HostArray.of(back)).join();
					assertThat(back).containsExactly(7, 8);
				}
				this.launcher.launch(slow, ONE, cells, 0, 5, 300);
				cells.upload(host); // after the kernel on the same stream, so it wins
				cells.download(HostArray.of(out)).join();
				assertThat(out).containsExactly(7, 8);
			}
		}
		assertNothingLeaked();
	}

	@Test
	void copiesWithoutAStreamOutsideAScopeGoToTheThreadsDefaultStream() {
		Kernel slow = this.launcher.load(ContractKernels.SLEEP_THEN_SET);
		try (StreamLease lease = this.pool.acquire()) {
			// Owned by the lease's stream and already used on the default one: a download on the lease's
			// stream would not wait for the default stream's kernel below.
			DeviceBuffer cells = this.launcher.callWithStream(lease.stream(), () -> this.launcher.allocate(2, ElementType.INT));
			try (cells) {
				cells.fill((byte) 0, lease.stream());
				cells.fill((byte) 0);
				this.launcher.launch(slow, ONE, cells, 0, 9, 300);
				int[] host = new int[2];
				cells.download(HostArray.of(host)).join();
				assertThat(host).containsExactly(9, 0);
			}
		}
		assertNothingLeaked();
	}

	// ---- element-typed allocation and zero-length buffers ----------------------------------------

	@Test
	void allocationByElementCountHasTheElementsBytes() {
		for (ElementType type : ElementType.values()) {
			try (DeviceBuffer buffer = this.launcher.allocate(10, type)) {
				assertThat(buffer.byteSize()).as(type.name()).isEqualTo(10L * type.bytes());
			}
		}
		assertThat(ElementType.FLOAT.byteSize(3)).isEqualTo(12);
		assertNothingLeaked();
	}

	@Test
	void zeroLengthBuffersAreZeroLengthAndUsable() {
		Kernel saxpy = this.launcher.load(ContractKernels.SAXPY);
		try (DeviceBuffer x = this.launcher.upload(HostArray.of(new float[0])); DeviceBuffer y = this.launcher.allocate(0, ElementType.FLOAT);
				DeviceBuffer ints = this.launcher.upload(HostArray.of(new int[0])); DeviceBuffer longs = this.launcher.upload(HostArray.of(new long[0]));
				DeviceBuffer doubles = this.launcher.upload(HostArray.of(new double[0])); DeviceBuffer bytes = this.launcher.upload(HostArray.of(new byte[0]));
				DeviceBuffer direct = this.launcher.upload(HostArray.of(ByteBuffer.allocateDirect(0)));
				DeviceBuffer none = this.launcher.allocate(0, ElementType.BYTE)) {
			for (DeviceBuffer buffer : List.of(x, y, ints, longs, doubles, bytes, direct, none)) {
				assertThat(buffer.byteSize()).isZero();
			}
			assertThat(x.download(HostArray.of(new float[0]))).succeedsWithin(Duration.ofSeconds(10));
			try (HostBuffer empty = this.launcher.allocateHost(0); DeviceBuffer fromEmpty = this.launcher.upload(empty)) {
				assertThat(empty.byteSize()).isZero();
				assertThat(empty.asByteBuffer().remaining()).isZero();
				assertThat(fromEmpty.byteSize()).isZero();
				assertThat(x.upload(empty)).succeedsWithin(Duration.ofSeconds(10));
				assertThat(x.download(empty)).succeedsWithin(Duration.ofSeconds(10));
			}
			assertThat(y.upload(HostArray.of(new float[0]))).succeedsWithin(Duration.ofSeconds(10));
			x.fill((byte) 1);
			y.copyFrom(x, 0, 0, 0);
			// A kernel that reads nothing for n = 0 runs with them, in an empty launch and in a real one.
			this.launcher.launch(saxpy, LaunchConfig.linear(0, 256), 0, 2f, x, y);
			this.launcher.launch(saxpy, ONE, 0, 2f, x, y);
			this.launcher.currentStream().synchronize();
			assertThat(this.context.memory().usedBytes()).isEqualTo(this.memoryAtStart);
		}
		assertNothingLeaked();
	}

	// ---- empty launches ----------------------------------------------------------------------------

	@Test
	void anEmptyLaunchDoesNothingKeepsOrderAndCountsAsALaunch() {
		Kernel append = this.launcher.load(ContractKernels.APPEND);
		LaunchConfig empty = LaunchConfig.linear(0, 256);
		assertThat(empty.isEmpty()).isTrue();
		assertThat(LaunchConfig.covering(0, 7, Dim3.of(16, 16)).isEmpty()).isTrue();
		assertThat(LaunchConfig.covering(33, 7, Dim3.of(16, 16)).grid()).isEqualTo(Dim3.of(3, 1));
		assertThat(LaunchConfig.linear(1, 256).isEmpty()).isFalse();
		try (StreamLease lease = this.pool.acquire(); StreamScope scope = this.launcher.useStream(lease.stream());
				DeviceBuffer log = this.launcher.upload(HostArray.of(new int[4]))) {
			this.launcher.launch(append, ONE, log, 1);
			this.launcher.launch(append, empty, log, 99);
			this.launcher.launch(append, LaunchConfig.of(Dim3.of(4, 0), Dim3.of(1)), log, 98);
			this.launcher.launch(append, ONE, log, 2);
			int[] host = new int[4];
			log.download(HostArray.of(host)).join();
			assertThat(host).containsExactly(2, 1, 2, 0);
		}
		assertThat(append.stats().launches()).isEqualTo(4);
		assertThat(this.launches).containsExactly("append:true", "append:true", "append:true", "append:true");
		assertNothingLeaked();
	}

	@Test
	void anEmptyLaunchIsCheckedLikeAnyOther() {
		Kernel saxpy = this.launcher.load(ContractKernels.SAXPY);
		LaunchConfig empty = LaunchConfig.linear(0, 256);
		try (DeviceBuffer x = this.launcher.allocate(0, ElementType.FLOAT)) {
			assertThatThrownBy(() -> this.launcher.launch(saxpy, empty, 0, 2f, x))
				.isInstanceOf(InvalidKernelArgumentException.class)
				.hasMessageContaining("takes 4 arguments");
			assertThatThrownBy(() -> this.launcher.launch(saxpy, LaunchConfig.of(Dim3.of(0), Dim3.of(4096)), 0, 2f, x, x))
				.isInstanceOf(InvalidLaunchConfigException.class)
				.hasMessageContaining("threads per block");
			KernelSource cudaOnly = KernelSource.named("cuda_only").params(ParamType.INT)
				.cuda("extern \"C\" __global__ void cuda_only(int n) {}");
			if (this.context.backend() == Backend.CPU) {
				Kernel loaded = this.launcher.load(cudaOnly);
				assertThatThrownBy(() -> this.launcher.launch(loaded, empty, 0))
					.isInstanceOf(UnsupportedBackendOperationException.class)
					.hasMessageContaining("no CPU implementation");
				// Counted as the same launch with a grid would be: refused by the backend.
				assertThat(loaded.stats().errors()).isEqualTo(1);
				assertThat(this.launches).containsExactly("cuda_only:false");
			}
		}
		assertThat(saxpy.stats().launches()).isZero();
		assertThat(this.launches).noneMatch((launch) -> launch.startsWith("saxpy"));
		assertNothingLeaked();
	}

	// ---- argument errors ---------------------------------------------------------------------------

	@Test
	void argumentErrorsHaveTheirOwnTypeAndAreStillLaunchConfigErrors() {
		Kernel saxpy = this.launcher.load(ContractKernels.SAXPY);
		try (DeviceBuffer x = this.launcher.allocate(4, ElementType.FLOAT)) {
			assertThatThrownBy(() -> this.launcher.launch(saxpy, ONE, 4, 2.0, x, x))
				.isInstanceOf(InvalidLaunchConfigException.class)
				.isInstanceOfSatisfying(InvalidKernelArgumentException.class, (ex) -> {
					assertThat(ex.kernel()).isEqualTo("saxpy");
					assertThat(ex.argumentIndex()).isEqualTo(1);
				});
			assertThatThrownBy(() -> this.launcher.launch(saxpy, ONE, 4))
				.isInstanceOfSatisfying(InvalidKernelArgumentException.class,
						(ex) -> assertThat(ex.argumentIndex()).isEqualTo(-1));
		}
		assertNothingLeaked();
	}

	// ---- lease groups ------------------------------------------------------------------------------

	@Test
	void aLeaseGroupIsClosedInTryWithResources() {
		try (StreamLeases leases = this.pool.acquireAll(3)) {
			assertThat(leases).hasSize(3);
			assertThat(leases.streams()).doesNotHaveDuplicates().hasSize(3);
			assertThat(leases.stream(1)).isSameAs(leases.get(1).stream());
			assertThat(this.pool.stats().active()).isEqualTo(3);
		}
		assertThat(this.pool.stats().active()).isZero();
		try (StreamLeases high = this.pool.acquireAll(StreamPriority.HIGH, 2);
				StreamLeases quick = this.pool.acquireAll(2, Duration.ZERO)) {
			assertThat(high.get(0).stream().priority()).isEqualTo(StreamPriority.HIGH);
			assertThat(this.pool.stats().active()).isEqualTo(4);
			quick.get(0).close(); // a lease closed on its own first is fine
		}
		assertNothingLeaked();
	}

	@Test
	void closingALeaseGroupClosesEveryLeaseEvenWhenOneCloseFails() {
		AtomicInteger releases = new AtomicInteger();
		try (GpuContext failing = builder().poolSize(0).maxSize(4).listener(new GpuListener() {
			@Override
			public void leaseReleased(long heldNanos) {
				int n = releases.incrementAndGet();
				if (n <= 2) {
					throw new IllegalStateException("listener failure " + n);
				}
			}
		}).open()) {
			StreamLeases leases = failing.streams().acquireAll(3);
			assertThatThrownBy(leases::close).isInstanceOf(IllegalStateException.class)
				.hasMessage("listener failure 1")
				.satisfies((ex) -> assertThat(ex.getSuppressed()).extracting(Throwable::getMessage)
					.containsExactly("listener failure 2"));
			assertThat(leases).allMatch(StreamLease::isClosed);
			assertThat(failing.streams().stats().active()).isZero();
			leases.close(); // again: nothing left to return, nothing thrown
			assertThat(releases).hasValue(3);
		}
	}

	// ---- upload and download overloads -------------------------------------------------------------

	@Test
	void everyElementTypeRoundTripsWithAndWithoutOffsets() {
		try (StreamLease lease = this.pool.acquire(); StreamScope scope = this.launcher.useStream(lease.stream())) {
			GpuStream s = lease.stream();
			try (DeviceBuffer f = this.launcher.upload(HostArray.of(new float[] { 1.5f, -2f, 3f }))) {
				f.upload(HostArray.of(new float[] { 9f }), 2, s);
				float[] out = new float[2];
				f.download(HostArray.of(out), 1, s).join();
				assertThat(out).containsExactly(-2f, 9f);
			}
			try (DeviceBuffer i = this.launcher.upload(HostArray.of(new int[] { 1, 2, 3 }))) {
				i.upload(HostArray.of(new int[] { 7 }), 1, s);
				int[] out = new int[3];
				i.download(HostArray.of(out)).join();
				assertThat(out).containsExactly(1, 7, 3);
				int[] tail = new int[1];
				i.download(HostArray.of(tail), 2, s).join();
				assertThat(tail).containsExactly(3);
			}
			try (DeviceBuffer l = this.launcher.upload(HostArray.of(new long[] { Long.MIN_VALUE, 2 }))) {
				l.upload(HostArray.of(new long[] { Long.MAX_VALUE }), 1, s);
				long[] out = new long[2];
				l.download(HostArray.of(out)).join();
				assertThat(out).containsExactly(Long.MIN_VALUE, Long.MAX_VALUE);
				long[] second = new long[1];
				l.download(HostArray.of(second), 1, s).join();
				assertThat(second).containsExactly(Long.MAX_VALUE);
			}
			try (DeviceBuffer d = this.launcher.upload(HostArray.of(new double[] { Math.PI, Math.E }))) {
				d.upload(HostArray.of(new double[] { -0.0 }), 0, s);
				double[] out = new double[2];
				d.download(HostArray.of(out)).join();
				assertThat(out).containsExactly(-0.0, Math.E);
				double[] second = new double[1];
				d.download(HostArray.of(second), 1, s).join();
				assertThat(second).containsExactly(Math.E);
			}
			try (DeviceBuffer b = this.launcher.upload(HostArray.of(new byte[] { 1, 2, 3, 4, 5 }))) {
				b.upload(HostArray.of(new byte[] { 9, 9 }), 3, s);
				byte[] out = new byte[5];
				b.download(HostArray.of(out)).join();
				assertThat(out).containsExactly(1, 2, 3, 9, 9);
				byte[] mid = new byte[2];
				b.download(HostArray.of(mid), 1, s).join();
				assertThat(mid).containsExactly(2, 3);
				b.upload(HostArray.of(new byte[] { 4 }), s);
				b.download(HostArray.of(mid), s).join();
				assertThat(mid).containsExactly(4, 2);
			}
			ByteBuffer host = ByteBuffer.allocate(8).order(ByteOrder.nativeOrder()).putInt(0, 11).putInt(4, 12);
			try (DeviceBuffer bb = this.launcher.upload(HostArray.of(host))) {
				assertThat(bb.byteSize()).isEqualTo(8);
				ByteBuffer back = ByteBuffer.allocate(8).order(ByteOrder.nativeOrder());
				bb.upload(HostArray.of(ByteBuffer.allocate(4).order(ByteOrder.nativeOrder()).putInt(0, 21))).join();
				CompletableFuture<Void> done = bb.download(HostArray.of(back));
				done.join();
				assertThat(back.getInt(0)).isEqualTo(21);
				assertThat(back.getInt(4)).isEqualTo(12);
			}
		}
		assertNothingLeaked();
	}

	// ---- native handles ----------------------------------------------------------------------------

	@Test
	void nativeHandlesArePresentOnCudaOnlyAndChecked() throws Exception {
		try (StreamLease lease = this.pool.acquire(); DeviceBuffer buffer = this.launcher.allocate(16, ElementType.FLOAT)) {
			if (this.context.backend() == Backend.CPU) {
				assertThat(buffer.nativeHandle(Long.class, lease.stream())).isEmpty();
				assertThat(buffer.nativeHandle(Object.class)).isEmpty();
				assertThat(lease.stream().nativeHandle(Object.class)).isEmpty();
			}
			else {
				Class<?> pointer = Class.forName("jcuda.driver.CUdeviceptr");
				Class<?> stream = Class.forName("jcuda.driver.CUstream");
				assertThat(buffer.nativeHandle(Long.class, lease.stream())).get().isNotEqualTo(0L);
				assertThat(buffer.nativeHandle(pointer, lease.stream())).get().isInstanceOf(pointer)
					.isNotSameAs(buffer.nativeHandle(pointer, lease.stream()).get());
				assertThat(lease.stream().nativeHandle(stream)).get().isInstanceOf(stream);
				assertThat(this.context.defaultStream().nativeHandle(stream)).isPresent();
				assertThat(buffer.nativeHandle(String.class)).isEmpty();
			}
		}
		assertNothingLeaked();
	}

}
