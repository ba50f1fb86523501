package dev.gpucompute.sample.search;

import java.io.IOException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import dev.gpucompute.Backend;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuException;
import dev.gpucompute.GpuLauncher;
import dev.gpucompute.GpuStream;
import dev.gpucompute.Kernel;
import dev.gpucompute.KernelLaunchException;
import dev.gpucompute.KernelSource;
import dev.gpucompute.LaunchConfig;
import dev.gpucompute.ParamType;
import dev.gpucompute.StreamLease;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The one place the service waits for its device work, on the CPU backend: work already on the stream
 * is waited for also when enqueueing the rest failed (so none of it outlives the caller's lock), the
 * enqueueing's failure is what the caller sees with the stream's own failure added, and a download's
 * failure comes out as itself (a cause that is not a runtime exception wrapped).
 */
class DeviceWorkTests {

	private GpuContext context;

	private GpuLauncher launcher;

	@BeforeEach
	void open() {
		this.context = GpuContext.builder().backend(Backend.CPU).poolSize(1).maxSize(2).cpuThreads(1).open();
		this.launcher = this.context.launcher();
	}

	@AfterEach
	void close() {
		this.context.close();
	}

	@Test
	void workOnTheStreamHasRunWhenAFailedEnqueueReturns() throws InterruptedException {
		CountDownLatch release = new CountDownLatch(1);
		AtomicBoolean ran = new AtomicBoolean();
		Kernel held = this.launcher.load(KernelSource.named("held").params(ParamType.INT).cpu((block, args) -> {
			try {
				release.await(30, TimeUnit.SECONDS);
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
			}
			ran.set(true);
		}));
		Thread caller = Thread.currentThread();
		AtomicBoolean returned = new AtomicBoolean();
		// Lets the kernel finish only once the caller waits for it (or has returned without waiting).
		Thread releaser = new Thread(() -> {
			while (!returned.get() && caller.getState() != Thread.State.WAITING
					&& caller.getState() != Thread.State.TIMED_WAITING) {
				Thread.onSpinWait();
			}
			release.countDown();
		});
		try (StreamLease lease = this.context.streams().acquire()) {
			GpuStream stream = lease.stream();
			releaser.start();
			try {
				assertThatThrownBy(() -> DeviceWork.runThenSynchronize(stream, () -> {
					this.launcher.launch(stream, held, LaunchConfig.linear(1, 1), 0);
					throw new IllegalStateException("the second launch could not be enqueued");
				})).isInstanceOf(IllegalStateException.class);
				returned.set(true);
				assertThat(ran).as("the launch that was enqueued has run").isTrue();
			}
			finally {
				returned.set(true);
				releaser.join();
				stream.synchronize();
			}
		}
	}

	@Test
	void theEnqueueingsFailureIsThrownWithTheStreamsOwnAddedAsSuppressed() {
		Kernel failing = failingKernel();
		try (StreamLease lease = this.context.streams().acquire()) {
			GpuStream stream = lease.stream();
			IllegalStateException enqueueFailure = new IllegalStateException("enqueue failed");
			assertThatThrownBy(() -> DeviceWork.runThenSynchronize(stream, () -> {
				this.launcher.launch(stream, failing, LaunchConfig.linear(1, 1), 0);
				throw enqueueFailure;
			})).isSameAs(enqueueFailure);
			assertThat(enqueueFailure.getSuppressed()).singleElement().isInstanceOf(KernelLaunchException.class);
		}
	}

	@Test
	void theStreamsFailureIsThrownWhenTheEnqueueingSucceeded() {
		Kernel failing = failingKernel();
		try (StreamLease lease = this.context.streams().acquire()) {
			GpuStream stream = lease.stream();
			assertThatThrownBy(() -> DeviceWork.runThenSynchronize(stream,
					() -> this.launcher.launch(stream, failing, LaunchConfig.linear(1, 1), 0)))
				.isInstanceOf(KernelLaunchException.class);
		}
	}

	@Test
	void aDownloadsRuntimeFailureIsThrownAsItselfAndAnyOtherCauseWrapped() {
		IllegalStateException first = new IllegalStateException("first");
		CompletableFuture<Void> later = new CompletableFuture<>();
		CompletableFuture.runAsync(() -> later.completeExceptionally(new IOException("second")));
		assertThatThrownBy(() -> DeviceWork.await(List.of(CompletableFuture.failedFuture(first), later),
				Duration.ofSeconds(30)))
			.isSameAs(first);
		assertThatThrownBy(() -> DeviceWork.await(List.of(later), Duration.ofSeconds(30)))
			.isInstanceOf(GpuException.class)
			.hasCauseInstanceOf(IOException.class);
	}

	@Test
	void downloadsThatDoNotArriveInTimeFail() {
		assertThatThrownBy(() -> DeviceWork.await(List.of(new CompletableFuture<>()), Duration.ofMillis(1)))
			.isInstanceOf(GpuException.class)
			.hasMessageContaining("did not arrive within");
	}

	private Kernel failingKernel() {
		return this.launcher.load(KernelSource.named("failing").params(ParamType.INT).cpu((block, args) -> {
			throw new IllegalStateException("the kernel failed");
		}));
	}

}
