package dev.gpucompute.contract.kernel;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;

import org.junit.jupiter.api.Test;

import dev.gpucompute.DeviceBuffer;
import dev.gpucompute.Dim3;
import dev.gpucompute.ElementType;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuException;
import dev.gpucompute.GpuLauncher;
import dev.gpucompute.GpuStream;
import dev.gpucompute.HostArray;
import dev.gpucompute.InvalidBufferRangeException;
import dev.gpucompute.InvalidLaunchConfigException;
import dev.gpucompute.Kernel;
import dev.gpucompute.KernelNotFoundException;
import dev.gpucompute.LaunchConfig;
import dev.gpucompute.StreamLease;
import dev.gpucompute.StreamScope;
import dev.gpucompute.contract.ContractKernels;
import dev.gpucompute.contract.GpuContractFixture;
import dev.gpucompute.settings.KernelTiming;

/**
 * Launches on every backend (docs/runtime.md, "Semantics"): the launcher's current stream (thread-local,
 * restored after a scope even when it throws), stream-parallel groups (fork after the parent's work,
 * join before it continues, branches overlap, every stream back when a branch throws, no nesting),
 * bad input refused before it reaches the driver (launch dimensions and the device's limits,
 * arguments of the wrong count, type or null, unknown or clashing kernel names, copies outside a
 * buffer), and saxpy against a Java reference. A subclass supplies the backend through
 * {@link #builder()}; the context and helpers come from {@link GpuContractFixture}.
 */
public abstract class LaunchContractSuite extends GpuContractFixture {

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

}
