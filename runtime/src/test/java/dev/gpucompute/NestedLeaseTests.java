package dev.gpucompute;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

import org.junit.jupiter.api.Test;

import dev.gpucompute.StreamPool.StreamLeases;
import dev.gpucompute.batch.GpuBatcher;

/**
 * A thread that works on a pooled stream (its current stream, in a scope) and asks the pool for more
 * streams than it leases beside that one would wait for itself until the acquire timeout: it is refused
 * at once with {@link PoolTooSmallException} (without that, a batch handler that leased a
 * group while its batch held a stream made a search on a pool of one stream wait 30 s and answer 503).
 * Requests the pool can grant beside it, and leases merely held without a scope, are not affected.
 */
class NestedLeaseTests {

	private static GpuContext open(int maxSize) {
		return GpuContext.builder().backend(Backend.CPU).cpuThreads(2).poolSize(1).maxSize(maxSize)
			.acquireTimeout(Duration.ofSeconds(30)).open();
	}

	@Test
	void leasingBesideTheScopedStreamOfAFullPoolIsRefusedAtOnce() {
		try (GpuContext context = open(1); StreamLease lease = context.streams().acquire();
				StreamScope scope = context.launcher().useStream(lease.stream())) {
			assertThatThrownBy(() -> context.streams().acquire(Duration.ofSeconds(30)))
				.isInstanceOfSatisfying(PoolTooSmallException.class, (ex) -> {
					assertThat(ex.heldByCaller()).isEqualTo(1);
					assertThat(ex.maxLeasable()).isEqualTo(1);
				})
				.hasMessageContaining("while this thread works on a pooled stream")
				.hasMessageContaining("gpu.streams.max-size");
			assertThat(context.streams().stats().timeouts()).as("refused, not timed out").isZero();
			assertThat(context.streams().stats().active()).isEqualTo(1);
		}
	}

	@Test
	void aGroupBesideTheScopedStreamIsRefusedWhenItCannotFitAndLeasedWhenItCan() {
		try (GpuContext context = open(3); StreamLease lease = context.streams().acquire();
				StreamScope scope = context.launcher().useStream(lease.stream())) {
			assertThatThrownBy(() -> context.streams().acquireAll(3)).isInstanceOf(PoolTooSmallException.class)
				.hasMessageContaining("Cannot lease 3 more streams while this thread works on a pooled stream");
			try (StreamLeases two = context.streams().acquireAll(2)) {
				assertThat(two).hasSize(2);
			}
			Consumer<GpuStream> nothing = (stream) -> {
			};
			context.launcher().parallel(List.of(nothing, nothing));
			assertThatThrownBy(() -> context.launcher().parallel(List.of(nothing, nothing, nothing)))
				.isInstanceOf(PoolTooSmallException.class);
			assertThat(context.streams().stats().timeouts()).isZero();
		}
	}

	@Test
	void inABranchOfAGroupTheWholeGroupCountsAsHeld() {
		try (GpuContext context = open(3)) {
			Consumer<GpuStream> leasesTwo = (stream) -> assertThatThrownBy(() -> context.streams().acquireAll(2))
				.isInstanceOfSatisfying(PoolTooSmallException.class, (ex) -> {
					assertThat(ex.heldByCaller()).isEqualTo(2);
					assertThat(ex.demand()).isEqualTo("2 more streams beside the 2 it works on");
				});
			Consumer<GpuStream> leasesOne = (stream) -> {
				try (StreamLease third = context.streams().acquire()) {
					assertThat(third.stream()).isNotEqualTo(stream);
				}
			};
			context.launcher().parallel(List.of(leasesTwo, leasesOne));
			assertThat(context.streams().stats().timeouts()).isZero();
			assertThat(new PoolTooSmallException(4, 3, StreamPriority.NORMAL, false).demand()).isEqualTo("4 streams at once");
		}
	}

	@Test
	void aLeaseHeldWithoutAScopeStillWaitsForAnotherThreadToCloseIt() {
		try (GpuContext context = open(1)) {
			StreamLease handedOff = context.streams().acquire();
			// A lease given to another thread, which closes it: this thread's wait is the normal one.
			CompletableFuture.runAsync(() -> {
				try {
					Thread.sleep(100);
				}
				catch (InterruptedException ex) {
					Thread.currentThread().interrupt();
				}
				handedOff.close();
			});
			try (StreamLease next = context.streams().acquire(Duration.ofSeconds(30))) {
				assertThat(next.stream().kind()).isEqualTo(GpuStream.Kind.POOLED);
			}
		}
	}

	@Test
	void aBatchHandlerThatLeasesMoreThanThePoolHoldsBesideItsBatchFailsAtOnce() throws Exception {
		try (GpuContext context = open(2)) {
			Consumer<GpuStream> nothing = (stream) -> {
			};
			GpuBatcher<Integer, Integer> batcher = GpuBatcher.<Integer, Integer>builder(context, (batch) -> {
				// The batch's stream is current here: a group of two beside it needs three streams.
				context.launcher().parallel(List.of(nothing, nothing));
				return batch.items();
			}).name("nested").build();
			try {
				CompletableFuture<Integer> item = batcher.submit(7);
				assertThatThrownBy(() -> item.get(10, TimeUnit.SECONDS)).isInstanceOf(ExecutionException.class)
					.cause().isInstanceOf(PoolTooSmallException.class);
				assertThat(context.streams().stats().timeouts()).isZero();
			}
			finally {
				batcher.close();
			}
		}
	}

}
