package dev.gpucompute.internal.stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;

import dev.gpucompute.Backend;
import dev.gpucompute.ContextClosedException;
import dev.gpucompute.ContextMismatchException;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuException;
import dev.gpucompute.GpuStream;
import dev.gpucompute.StreamLease;
import dev.gpucompute.StreamScope;
import dev.gpucompute.internal.context.ContextImpl;
import dev.gpucompute.settings.DefaultStreamMode;

/**
 * The stream room's current-stream rules, on the room itself ({@link Streams} of a CPU context):
 * the default stream per mode, scopes that restore what was current, a scope that outlived its
 * lease, and the bookkeeping of stream-parallel groups.
 */
class StreamsTest {

	private static Streams streams(GpuContext context) {
		return ((ContextImpl) context).streamsRoom();
	}

	@Test
	void eachThreadHasItsOwnDefaultStreamInPerThreadMode() throws Exception {
		try (GpuContext context = GpuContext.builder().backend(Backend.CPU).open()) {
			Streams streams = streams(context);
			assertThat(streams.mode()).isEqualTo(DefaultStreamMode.PER_THREAD);
			StreamHandle mine = streams.current();
			assertThat(mine.kind()).isEqualTo(GpuStream.Kind.DEFAULT_PER_THREAD);
			assertThat(streams.defaultStream()).isSameAs(mine);
			StreamHandle other = CompletableFuture.supplyAsync(streams::current).get(10, TimeUnit.SECONDS);
			assertThat(other).isNotSameAs(mine);
		}
	}

	@Test
	void everyThreadSharesOneDefaultStreamInLegacyMode() throws Exception {
		try (GpuContext context = GpuContext.builder().backend(Backend.CPU).defaultStream(DefaultStreamMode.LEGACY)
			.open()) {
			Streams streams = streams(context);
			StreamHandle mine = streams.current();
			assertThat(mine.kind()).isEqualTo(GpuStream.Kind.DEFAULT_LEGACY);
			assertThat(CompletableFuture.supplyAsync(streams::current).get(10, TimeUnit.SECONDS)).isSameAs(mine);
		}
	}

	@Test
	void nestedScopesRestoreWhatWasCurrentBeforeThem() {
		try (GpuContext context = GpuContext.builder().backend(Backend.CPU).poolSize(2).open();
				StreamLease first = context.streams().acquire();
				StreamLease second = context.streams().acquire()) {
			Streams streams = streams(context);
			GpuStream byDefault = streams.current();
			try (StreamScope outer = streams.useStream(first.stream())) {
				assertThat((GpuStream) streams.current()).isSameAs(first.stream());
				try (StreamScope inner = streams.useStream(second.stream())) {
					assertThat((GpuStream) streams.current()).isSameAs(second.stream());
				}
				assertThat((GpuStream) streams.current()).isSameAs(first.stream());
				assertThat(streams.<GpuStream>callWithStream(second.stream(), streams::current)).isSameAs(second.stream());
				assertThat((GpuStream) streams.current()).isSameAs(first.stream());
			}
			assertThat((GpuStream) streams.current()).isSameAs(byDefault);
		}
	}

	@Test
	void aScopeThatOutlivedItsLeaseIsDroppedWithAnError() {
		try (GpuContext context = GpuContext.builder().backend(Backend.CPU).open()) {
			Streams streams = streams(context);
			StreamLease lease = context.streams().acquire();
			StreamScope scope = streams.useStream(lease.stream());
			lease.close();
			// Reports look past it without changing anything...
			assertThat(streams.currentQuietly().kind()).isEqualTo(GpuStream.Kind.DEFAULT_PER_THREAD);
			// ...a launch's lookup says what happened, once, and the thread is back on its default stream.
			assertThatThrownBy(streams::current).isInstanceOf(GpuException.class)
				.hasMessageContaining("belongs to a lease that was closed while a StreamScope still made it current");
			assertThat(streams.current().kind()).isEqualTo(GpuStream.Kind.DEFAULT_PER_THREAD);
			scope.close();
		}
	}

	@Test
	void refusesAStreamOfAnotherContext() {
		try (GpuContext mine = GpuContext.builder().backend(Backend.CPU).open();
				GpuContext theirs = GpuContext.builder().backend(Backend.CPU).open();
				StreamLease lease = theirs.streams().acquire()) {
			assertThatThrownBy(() -> streams(mine).useStream(lease.stream()))
				.isInstanceOf(ContextMismatchException.class);
		}
	}

	@Test
	void countsTheLeasesAGroupHoldsOnItsThreadOnly() throws Exception {
		try (GpuContext context = GpuContext.builder().backend(Backend.CPU).open()) {
			Streams streams = streams(context);
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
		GpuContext context = GpuContext.builder().backend(Backend.CPU).open();
		Streams streams = streams(context);
		context.close();
		assertThatThrownBy(streams::defaultStream).isInstanceOf(ContextClosedException.class);
	}

}
