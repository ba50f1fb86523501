package dev.gpucompute.cpu;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import dev.gpucompute.Backend;
import dev.gpucompute.DeviceBuffer;
import dev.gpucompute.Dim3;
import dev.gpucompute.ElementType;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuEvent;
import dev.gpucompute.GpuLauncher;
import dev.gpucompute.HostArray;
import dev.gpucompute.Kernel;
import dev.gpucompute.KernelLaunchException;
import dev.gpucompute.KernelSource;
import dev.gpucompute.LaunchConfig;
import dev.gpucompute.ParamType;
import dev.gpucompute.StreamLease;
import dev.gpucompute.listener.GpuListener;
import dev.gpucompute.settings.KernelTiming;

/**
 * Who is told of a kernel failure (docs/runtime.md, "Semantics", item 10): the holder whose work depends on it, once, at its
 * next synchronisation, completion, download or event wait; never a later holder of the same pooled
 * stream; and every failure is counted however it was observed. Only the CPU backend can show this:
 * a failing CUDA kernel ends the whole context.
 */
class CpuFailureSemanticsTests {

	private static final LaunchConfig ONE = LaunchConfig.of(Dim3.of(1), Dim3.of(1));

	/** Fails when its argument is negative, after the gate (when given) opens. */
	private static final CountDownLatch OPEN = new CountDownLatch(0);

	private final List<String> failures = new CopyOnWriteArrayList<>();

	private volatile CountDownLatch gate = OPEN;

	private final KernelSource check = KernelSource.named("check").params(ParamType.INT).cpu((block, args) -> {
		try {
			this.gate.await();
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
		}
		if (args.i32(0) < 0) {
			throw new IllegalArgumentException("negative input " + args.i32(0));
		}
	});

	private GpuContext context;

	private GpuLauncher launcher;

	private Kernel kernel;

	@BeforeEach
	void open() {
		GpuListener listener = new GpuListener() {
			@Override
			public void kernelFailed(String name) {
				CpuFailureSemanticsTests.this.failures.add(name);
			}
		};
		// One pooled stream, so that every lease gets the same stream.
		this.context = GpuContext.builder().backend(Backend.CPU).cpuThreads(2).poolSize(1).maxSize(1)
			.kernelTiming(KernelTiming.OFF).listener(listener).open();
		this.launcher = this.context.launcher();
		this.kernel = this.launcher.load(this.check);
	}

	@AfterEach
	void close() {
		this.gate = OPEN;
		this.context.close();
	}

	@Test
	void aFailureReachesTheDownloadThatDependsOnItOnceAndTheStreamStaysClean() throws Exception {
		try (StreamLease lease = this.context.streams().acquire(); DeviceBuffer buffer = allocateOn(lease)) {
			this.launcher.launch(lease.stream(), this.kernel, ONE, -1);
			CompletableFuture<Void> download = buffer.download(HostArray.of(new int[1]), lease.stream());
			assertThatThrownBy(() -> download.get(10, TimeUnit.SECONDS)).isInstanceOf(ExecutionException.class)
				.hasCauseInstanceOf(KernelLaunchException.class)
				.hasMessageContaining("negative input -1");
			// Reported once: the same holder's next synchronisation and round trip are clean.
			assertThatCode(() -> lease.stream().synchronize()).doesNotThrowAnyException();
			this.launcher.launch(lease.stream(), this.kernel, ONE, 1);
			buffer.download(HostArray.of(new int[1]), lease.stream()).get(10, TimeUnit.SECONDS);
		}
		assertCountedOnce();
	}

	@Test
	void aReleasedLeaseLeavesACleanStreamForTheNextHolder() throws Exception {
		this.gate = new CountDownLatch(1);
		String first;
		try (StreamLease lease = this.context.streams().acquire()) {
			first = lease.stream().name();
			// Fails after the lease is back in the pool: its holder never waited for it.
			this.launcher.launch(lease.stream(), this.kernel, ONE, -2);
		}
		try (StreamLease next = this.context.streams().acquire()) {
			assertThat(next.stream().name()).as("the same pooled stream").isEqualTo(first);
			this.gate.countDown();
			this.launcher.launch(next.stream(), this.kernel, ONE, 2);
			assertThatCode(() -> next.stream().synchronize()).doesNotThrowAnyException();
			assertThatCode(() -> next.stream().completion().get(10, TimeUnit.SECONDS)).doesNotThrowAnyException();
		}
		assertCountedOnce();
	}

	@Test
	void aFutureOfTheFormerHolderStillGetsItsFailureAfterTheLeaseWentBack() throws Exception {
		this.gate = new CountDownLatch(1);
		CompletableFuture<Void> completion;
		try (StreamLease lease = this.context.streams().acquire()) {
			this.launcher.launch(lease.stream(), this.kernel, ONE, -3);
			completion = lease.stream().completion();
		}
		try (StreamLease next = this.context.streams().acquire()) {
			this.launcher.launch(next.stream(), this.kernel, ONE, 3);
			CompletableFuture<Void> nextCompletion = next.stream().completion();
			this.gate.countDown();
			assertThatThrownBy(() -> completion.get(10, TimeUnit.SECONDS)).hasCauseInstanceOf(KernelLaunchException.class)
				.hasMessageContaining("negative input -3");
			assertThatCode(() -> nextCompletion.get(10, TimeUnit.SECONDS)).doesNotThrowAnyException();
			assertThatCode(() -> next.stream().synchronize()).doesNotThrowAnyException();
		}
		assertCountedOnce();
	}

	@Test
	void anEventWaitReportsTheFailureOfTheWorkBeforeItsRecord() {
		try (StreamLease lease = this.context.streams().acquire(); GpuEvent event = this.context.events().create()) {
			this.launcher.launch(lease.stream(), this.kernel, ONE, -4);
			lease.stream().record(event);
			this.launcher.launch(lease.stream(), this.kernel, ONE, 4);
			assertThatThrownBy(event::synchronize).isInstanceOf(KernelLaunchException.class)
				.hasMessageContaining("negative input -4");
			assertThatCode(() -> lease.stream().synchronize()).doesNotThrowAnyException();
		}
		assertCountedOnce();
	}

	@Test
	void aCompletionRegisteredBeforeTheFailingLaunchIsNotToldOfIt() throws Exception {
		this.gate = new CountDownLatch(1);
		try (StreamLease lease = this.context.streams().acquire()) {
			this.launcher.launch(lease.stream(), this.kernel, ONE, 5);
			CompletableFuture<Void> before = lease.stream().completion();
			this.launcher.launch(lease.stream(), this.kernel, ONE, -5);
			this.gate.countDown();
			assertThatCode(() -> before.get(10, TimeUnit.SECONDS)).doesNotThrowAnyException();
			assertThatThrownBy(() -> lease.stream().synchronize()).isInstanceOf(KernelLaunchException.class);
		}
		assertCountedOnce();
	}

	@Test
	void aFailureNobodyWaitsForIsStillCounted() {
		try (StreamLease lease = this.context.streams().acquire()) {
			this.launcher.launch(lease.stream(), this.kernel, ONE, -6);
		}
		this.context.synchronizeDevice();
		assertCountedOnce();
	}

	@Test
	void twoFailuresBeforeOneWaitAreReportedTogether() {
		try (StreamLease lease = this.context.streams().acquire()) {
			this.launcher.launch(lease.stream(), this.kernel, ONE, -7);
			this.launcher.launch(lease.stream(), this.kernel, ONE, -8);
			assertThatThrownBy(() -> lease.stream().synchronize()).isInstanceOf(KernelLaunchException.class)
				.hasMessageContaining("negative input -7")
				.satisfies((ex) -> assertThat(ex.getSuppressed()).singleElement()
					.satisfies((suppressed) -> assertThat(suppressed).hasMessageContaining("negative input -8")));
			assertThatCode(() -> lease.stream().synchronize()).doesNotThrowAnyException();
		}
		assertThat(this.kernel.stats().errors()).isEqualTo(2);
		assertThat(this.failures).containsExactly("check", "check");
	}

	private DeviceBuffer allocateOn(StreamLease lease) {
		return this.launcher.callWithStream(lease.stream(), () -> this.launcher.allocate(4, ElementType.BYTE));
	}

	private void assertCountedOnce() {
		this.context.synchronizeDevice();
		assertThat(this.kernel.stats().errors()).as("failures counted").isEqualTo(1);
		assertThat(this.failures).as("failures reported to the listener").containsExactly("check");
	}

}
