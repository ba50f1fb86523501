package dev.gpucompute.internal.stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;

import dev.gpucompute.Backend;
import dev.gpucompute.ContextClosedException;
import dev.gpucompute.ContextMismatchException;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuException;
import dev.gpucompute.GpuLauncher;
import dev.gpucompute.GpuStream;
import dev.gpucompute.KernelSource;
import dev.gpucompute.StreamLease;
import dev.gpucompute.StreamScope;
import dev.gpucompute.cpu.CpuBackendProvider;
import dev.gpucompute.internal.core.CompletionFuture;
import dev.gpucompute.internal.core.ContextCompletions;
import dev.gpucompute.internal.core.ContextState;
import dev.gpucompute.settings.DefaultStreamMode;
import dev.gpucompute.spi.BackendConfig;
import dev.gpucompute.spi.BackendListener;
import dev.gpucompute.spi.DeviceBackend;

/**
 * The stream room's current-stream rules: the default stream per mode, scopes that restore what was
 * current, a scope that outlived its lease, streams of another context, seen through the launcher that
 * delegates them to the room; and the bookkeeping of stream-parallel groups on a room this test
 * builds itself over a CPU backend.
 */
class StreamsTests {

	@Test
	void eachThreadHasItsOwnDefaultStreamInPerThreadMode() throws Exception {
		try (GpuContext context = GpuContext.builder().backend(Backend.CPU).open()) {
			GpuLauncher launcher = context.launcher();
			assertThat(context.defaultStreamMode()).isEqualTo(DefaultStreamMode.PER_THREAD);
			GpuStream mine = launcher.currentStream();
			assertThat(mine.kind()).isEqualTo(GpuStream.Kind.DEFAULT_PER_THREAD);
			assertThat(context.defaultStream()).isSameAs(mine);
			GpuStream other = CompletableFuture.supplyAsync(launcher::currentStream).get(10, TimeUnit.SECONDS);
			assertThat(other).isNotSameAs(mine);
		}
	}

	@Test
	void everyThreadSharesOneDefaultStreamInLegacyMode() throws Exception {
		try (GpuContext context = GpuContext.builder().backend(Backend.CPU).defaultStream(DefaultStreamMode.LEGACY)
			.open()) {
			GpuLauncher launcher = context.launcher();
			GpuStream mine = launcher.currentStream();
			assertThat(mine.kind()).isEqualTo(GpuStream.Kind.DEFAULT_LEGACY);
			assertThat(CompletableFuture.supplyAsync(launcher::currentStream).get(10, TimeUnit.SECONDS)).isSameAs(mine);
		}
	}

	@Test
	void nestedScopesRestoreWhatWasCurrentBeforeThem() {
		try (GpuContext context = GpuContext.builder().backend(Backend.CPU).poolSize(2).open();
				StreamLease first = context.streams().acquire();
				StreamLease second = context.streams().acquire()) {
			GpuLauncher launcher = context.launcher();
			GpuStream byDefault = launcher.currentStream();
			try (StreamScope outer = launcher.useStream(first.stream())) {
				assertThat(launcher.currentStream()).isSameAs(first.stream());
				try (StreamScope inner = launcher.useStream(second.stream())) {
					assertThat(launcher.currentStream()).isSameAs(second.stream());
				}
				assertThat(launcher.currentStream()).isSameAs(first.stream());
				assertThat(launcher.callWithStream(second.stream(), launcher::currentStream)).isSameAs(second.stream());
				assertThat(launcher.currentStream()).isSameAs(first.stream());
			}
			assertThat(launcher.currentStream()).isSameAs(byDefault);
		}
	}

	@Test
	void aScopeThatOutlivedItsLeaseIsDroppedWithAnError() {
		try (GpuContext context = GpuContext.builder().backend(Backend.CPU).open()) {
			GpuLauncher launcher = context.launcher();
			StreamLease lease = context.streams().acquire();
			StreamScope scope = launcher.useStream(lease.stream());
			lease.close();
			// A kernel load, which looks at the work in flight on the current stream, looks past it
			// without changing anything...
			launcher.load(KernelSource.named("noop").cpu((block, args) -> {
			}));
			// ...a launch's lookup says what happened, once, and the thread is back on its default stream.
			assertThatThrownBy(launcher::currentStream).isInstanceOf(GpuException.class)
				.hasMessageContaining("belongs to a lease that was closed while a StreamScope still made it current");
			assertThat(launcher.currentStream().kind()).isEqualTo(GpuStream.Kind.DEFAULT_PER_THREAD);
			scope.close();
		}
	}

	@Test
	void refusesAStreamOfAnotherContext() {
		try (GpuContext mine = GpuContext.builder().backend(Backend.CPU).open();
				GpuContext theirs = GpuContext.builder().backend(Backend.CPU).open();
				StreamLease lease = theirs.streams().acquire()) {
			assertThatThrownBy(() -> mine.launcher().useStream(lease.stream()))
				.isInstanceOf(ContextMismatchException.class);
		}
	}

	@Test
	void countsTheLeasesAGroupHoldsOnItsThreadOnly() throws Exception {
		try (Room room = new Room()) {
			Streams streams = room.streams;
			assertThat(streams.inGroup()).isFalse();
			assertThat(streams.groupLeasesHeld()).isZero();
			streams.groupHolds(3);
			assertThat(streams.inGroup()).isTrue();
			assertThat(streams.groupLeasesHeld()).isEqualTo(3);
			assertThat(CompletableFuture.supplyAsync(streams::groupLeasesHeld).get(10, TimeUnit.SECONDS)).isZero();
			streams.groupEnded();
			assertThat(streams.inGroup()).isFalse();
		}
	}

	@Test
	void theDefaultStreamOfAClosedContextIsRefused() {
		try (Room room = new Room()) {
			room.lifecycle.closing();
			assertThatThrownBy(room.streams::defaultStream).isInstanceOf(ContextClosedException.class);
		}
	}

	/** A stream room built by hand over a CPU backend, with the collaborators a context gives it. */
	private static final class Room implements AutoCloseable {

		final DeviceBackend backend = new CpuBackendProvider()
			.open(new BackendConfig(0, 1, 1 << 20, 0, List.of(), null, BackendListener.NONE));

		final ContextState lifecycle = new ContextState(1, this.backend.info(), null);

		final ContextCompletions completions = new ContextCompletions(1, "streams-test-completion", 0,
				new CompletionFuture.Waits() {

					@Override
					public void started() {
					}

					@Override
					public void ended() {
					}

				});

		final Streams streams = new Streams(this.lifecycle, this.completions,
				new Events(this.backend, this.lifecycle, false), this.backend, DefaultStreamMode.PER_THREAD);

		@Override
		public void close() {
			this.completions.shutdown();
			this.backend.close();
		}

	}

}
