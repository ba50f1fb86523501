package dev.gpucompute.autoconfigure;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;

import dev.gpucompute.ContextClosedException;
import dev.gpucompute.DeviceBuffer;
import dev.gpucompute.ElementType;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuLauncher;
import dev.gpucompute.KernelSource;
import dev.gpucompute.LaunchConfig;
import dev.gpucompute.ParamType;
import dev.gpucompute.StreamLease;
import dev.gpucompute.StreamPool;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Tests for {@link GpuLifecycle}: at application stop, GPU work already enqueued finishes before
 * the context releases its resources, within {@code gpu.shutdown.drain-timeout}.
 */
@ExtendWith(OutputCaptureExtension.class)
class GpuLifecycleTests {

	private final CountDownLatch started = new CountDownLatch(1);

	private final CountDownLatch release = new CountDownLatch(1);

	private final AtomicBoolean finished = new AtomicBoolean();

	private final ApplicationContextRunner runner = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(GpuAutoConfiguration.class))
		.withPropertyValues("gpu.backend=cpu", "gpu.streams.pool-size=1", "gpu.streams.max-size=2")
		.withBean("blocking", KernelSource.class, () -> KernelSource.named("blocking").params(ParamType.INT)
			.cpu((block, args) -> {
				this.started.countDown();
				try {
					if (this.release.await(30, TimeUnit.SECONDS)) {
						this.finished.set(true);
					}
				}
				catch (InterruptedException ex) {
					Thread.currentThread().interrupt();
				}
			}));

	@Test
	void stopDrainsWorkInFlightBeforeTheContextIsClosed() {
		this.runner.withPropertyValues("gpu.shutdown.drain-timeout=30s").run((context) -> {
			GpuContext gpu = context.getBean(GpuContext.class);
			StreamPool pool = context.getBean(StreamPool.class);
			launchBlockingKernel(context.getBean(GpuLauncher.class), pool);
			Thread closer = new Thread(context::close, "closer");
			closer.start();
			// The lifecycle stopped handing out leases while the context itself is still open: it is draining.
			await().atMost(Duration.ofSeconds(10)).until(() -> leasesRefused(pool));
			assertThat(gpu.isClosed()).isFalse();
			assertThat(closer.isAlive()).isTrue();
			this.release.countDown();
			closer.join(10_000);
			assertThat(closer.isAlive()).isFalse();
			assertThat(this.finished).isTrue();
			assertThat(gpu.isClosed()).isTrue();
			assertThat(pool.stats().size()).isZero();
			assertThat(gpu.events().live()).isZero();
		});
	}

	@Test
	void drainGivesUpAfterTheDrainTimeout() {
		this.runner.withPropertyValues("gpu.shutdown.drain-timeout=50ms").run((context) -> {
			GpuContext gpu = context.getBean(GpuContext.class);
			StreamPool pool = context.getBean(StreamPool.class);
			launchBlockingKernel(context.getBean(GpuLauncher.class), pool);
			try {
				// The kernel is still blocked, yet the application closes: the timeout bounds the wait.
				context.close();
				assertThat(this.finished).isFalse();
				assertThat(gpu.isClosed()).isTrue();
				assertThat(pool.stats().size()).isZero();
				assertThat(gpu.events().live()).isZero();
			}
			finally {
				this.release.countDown();
			}
		});
	}

	@Test
	void drainLogsOneInfoLineWithWhatItDrainedAndHowLongItTook(CapturedOutput output) {
		this.runner.withPropertyValues("gpu.shutdown.drain-timeout=30s")
			.withBean("noop", KernelSource.class, () -> KernelSource.named("noop").params(ParamType.INT)
				.cpu((block, args) -> {
				}))
			.run((context) -> {
				GpuLauncher launcher = context.getBean(GpuLauncher.class);
				StreamPool pool = context.getBean(StreamPool.class);
				StreamLease lease = pool.acquire();
				DeviceBuffer buffer = launcher.allocate(64, ElementType.BYTE);
				launcher.launch(lease.stream(), launcher.kernel("blocking"), LaunchConfig.linear(1, 1), 1);
				assertThat(this.started.await(10, TimeUnit.SECONDS)).isTrue();
				Thread closer = new Thread(context::close, "closer");
				closer.start();
				await().atMost(Duration.ofSeconds(10)).until(() -> leasesRefused(pool));
				// A launch on a lease still held: it runs while the pool drains.
				launcher.launch(lease.stream(), launcher.kernel("noop"), LaunchConfig.linear(1, 1), 1);
				this.release.countDown();
				closer.join(10_000);
				assertThat(closer.isAlive()).isFalse();
				lease.close();
				buffer.close();
				List<String> lines = output.getOut().lines().filter((line) -> line.contains("Drained GPU work")).toList();
				assertThat(lines).hasSize(1);
				assertThat(lines.get(0)).contains(" INFO ")
					.containsPattern("Drained GPU work of CPU device 0 \\(.+\\) in \\d+ ms: ")
					.contains("1 stream lease was held and 0 threads were waiting for one when the pool stopped, "
							+ "1 kernel launch while draining (2 since start-up), 1 device buffer (64 B) left for the context to free");
			});
	}

	private void launchBlockingKernel(GpuLauncher launcher, StreamPool pool) throws InterruptedException {
		try (StreamLease lease = pool.acquire()) {
			launcher.launch(lease.stream(), launcher.kernel("blocking"), LaunchConfig.linear(1, 1), 1);
		}
		assertThat(this.started.await(10, TimeUnit.SECONDS)).isTrue();
	}

	private static boolean leasesRefused(StreamPool pool) {
		try (StreamLease lease = pool.acquire(Duration.ZERO)) {
			return false;
		}
		catch (ContextClosedException ex) {
			return true;
		}
	}

}
