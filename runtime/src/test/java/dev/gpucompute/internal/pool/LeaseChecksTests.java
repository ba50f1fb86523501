package dev.gpucompute.internal.pool;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.lang.reflect.Proxy;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import dev.gpucompute.Backend;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuStream;
import dev.gpucompute.PoolTooSmallException;
import dev.gpucompute.StreamLease;
import dev.gpucompute.StreamPriority;
import dev.gpucompute.StreamScope;
import dev.gpucompute.internal.core.ContextState;
import dev.gpucompute.internal.stream.Streams;
import dev.gpucompute.settings.DefaultStreamMode;
import dev.gpucompute.spi.DeviceBackend;

/**
 * The requests a pool refuses before its lock ({@link LeaseChecks}), checked directly: the checks
 * are made with a maximum of 4 and limits of 4 normal and 2 high streams of their own, against the
 * stream scope of a real context's thread (CPU backend), so that what they answer comes from those
 * figures and the scope alone.
 */
class LeaseChecksTests {

	private GpuContext context;

	private LeaseChecks checks;

	@BeforeEach
	void open() {
		this.context = GpuContext.builder().backend(Backend.CPU).cpuThreads(2).poolSize(1).maxSize(4)
			.acquireTimeout(Duration.ofSeconds(30)).open();
		Pool pool = (Pool) this.context.streams();
		this.checks = new LeaseChecks(pool.lifecycle(), pool.streams(), new PoolLedger(4, new int[] { 4, 2 }));
	}

	@AfterEach
	void close() {
		this.context.close();
	}

	@Test
	void aGroupOfNoStreamsOrOfMoreThanThePriorityMayLeaseIsRefused() {
		assertThatThrownBy(() -> this.checks.checkGroupSize(StreamPriority.HIGH, 0))
			.isInstanceOf(IllegalArgumentException.class)
			.hasMessage("Can lease 1 to 2 streams at once, asked for 0");
		assertThatCode(() -> this.checks.checkGroupSize(StreamPriority.HIGH, 2)).doesNotThrowAnyException();
		assertThatThrownBy(() -> this.checks.checkGroupSize(StreamPriority.HIGH, 3))
			.isInstanceOfSatisfying(PoolTooSmallException.class, (ex) -> {
				assertThat(ex.maxLeasable()).isEqualTo(2);
				assertThat(ex.isPriorityLimited()).as("below the maximum: the priority's limit").isTrue();
				assertThat(ex.heldByCaller()).isZero();
			});
		assertThatCode(() -> this.checks.checkGroupSize(StreamPriority.NORMAL, 4)).doesNotThrowAnyException();
		assertThatThrownBy(() -> this.checks.checkGroupSize(StreamPriority.NORMAL, 5))
			.isInstanceOfSatisfying(PoolTooSmallException.class, (ex) -> {
				assertThat(ex.maxLeasable()).isEqualTo(4);
				assertThat(ex.isPriorityLimited()).as("a limit at the maximum is the maximum").isFalse();
			});
	}

	@Test
	void badArgumentsAreRefused() {
		assertThatThrownBy(() -> LeaseChecks.checkArguments(null, Duration.ZERO)).isInstanceOf(NullPointerException.class)
			.hasMessage("priority");
		assertThatThrownBy(() -> LeaseChecks.checkArguments(StreamPriority.NORMAL, Duration.ofSeconds(-1)))
			.isInstanceOf(IllegalArgumentException.class)
			.hasMessageStartingWith("Acquire timeout must not be negative");
		assertThatCode(() -> LeaseChecks.checkArguments(StreamPriority.HIGH, Duration.ZERO)).doesNotThrowAnyException();
	}

	@Test
	void withoutAScopeNothingIsRefusedEvenWithALeaseHeld() {
		try (StreamLease held = this.context.streams().acquire()) {
			assertThatCode(() -> this.checks.checkNested(StreamPriority.NORMAL, 4)).doesNotThrowAnyException();
			assertThatCode(() -> this.checks.checkNested(StreamPriority.HIGH, 4)).doesNotThrowAnyException();
		}
	}

	@Test
	void inAScopeOfThePoolsStreamThatStreamCountsAgainstTheMaximum() {
		try (StreamLease lease = this.context.streams().acquire(StreamPriority.NORMAL);
				StreamScope scope = this.context.launcher().useStream(lease.stream())) {
			assertThatCode(() -> this.checks.checkNested(StreamPriority.NORMAL, 3)).doesNotThrowAnyException();
			assertThatThrownBy(() -> this.checks.checkNested(StreamPriority.NORMAL, 4))
				.isInstanceOfSatisfying(PoolTooSmallException.class, (ex) -> {
					assertThat(ex.maxLeasable()).isEqualTo(4);
					assertThat(ex.isPriorityLimited()).isFalse();
					assertThat(ex.heldByCaller()).isEqualTo(1);
				});
			// The high limit (2) does not count the normal stream held: only the maximum does.
			assertThatCode(() -> this.checks.checkNested(StreamPriority.HIGH, 2)).doesNotThrowAnyException();
			assertThatThrownBy(() -> this.checks.checkNested(StreamPriority.HIGH, 4))
				.isInstanceOfSatisfying(PoolTooSmallException.class, (ex) -> assertThat(ex.isPriorityLimited()).isFalse());
		}
	}

	@Test
	void inAScopeOfThePoolsStreamThatStreamCountsAgainstItsOwnPrioritysLimit() {
		try (StreamLease lease = this.context.streams().acquire(StreamPriority.HIGH);
				StreamScope scope = this.context.launcher().useStream(lease.stream())) {
			assertThatCode(() -> this.checks.checkNested(StreamPriority.HIGH, 1)).doesNotThrowAnyException();
			assertThatThrownBy(() -> this.checks.checkNested(StreamPriority.HIGH, 2))
				.isInstanceOfSatisfying(PoolTooSmallException.class, (ex) -> {
					assertThat(ex.maxLeasable()).isEqualTo(2);
					assertThat(ex.isPriorityLimited()).isTrue();
					assertThat(ex.heldByCaller()).isEqualTo(1);
				});
			assertThatCode(() -> this.checks.checkNested(StreamPriority.NORMAL, 3)).doesNotThrowAnyException();
		}
	}

	@Test
	void aScopeOfAnotherContextsStreamDoesNotCount() {
		try (GpuContext other = GpuContext.builder().backend(Backend.CPU).cpuThreads(1).poolSize(1).maxSize(1).open()) {
			try (StreamLease lease = other.streams().acquire();
					StreamScope scope = other.launcher().useStream(lease.stream())) {
				assertThatCode(() -> this.checks.checkNested(StreamPriority.NORMAL, 4)).doesNotThrowAnyException();
			}
			// Checks of the other context's pool, asked in a scope of this context's stream.
			Pool pool = (Pool) this.context.streams();
			LeaseChecks othersChecks = new LeaseChecks(((Pool) other.streams()).lifecycle(), pool.streams(),
					new PoolLedger(4, new int[] { 4, 2 }));
			try (StreamLease lease = this.context.streams().acquire();
					StreamScope scope = this.context.launcher().useStream(lease.stream())) {
				assertThatCode(() -> othersChecks.checkNested(StreamPriority.NORMAL, 4)).doesNotThrowAnyException();
				assertThatThrownBy(() -> this.checks.checkNested(StreamPriority.NORMAL, 4))
					.isInstanceOf(PoolTooSmallException.class);
			}
		}
	}

	@Test
	void inABranchOfAGroupEveryStreamOfTheGroupCounts() {
		AtomicInteger checked = new AtomicInteger();
		Consumer<GpuStream> branch = (stream) -> {
			assertThatCode(() -> this.checks.checkNested(StreamPriority.HIGH, 2)).doesNotThrowAnyException();
			assertThatThrownBy(() -> this.checks.checkNested(StreamPriority.HIGH, 3))
				.isInstanceOfSatisfying(PoolTooSmallException.class,
						(ex) -> assertThat(ex.heldByCaller()).isEqualTo(2));
			checked.incrementAndGet();
		};
		this.context.launcher().parallel(List.of(branch, branch));
		assertThat(checked).hasValue(2);
	}

	@Test
	void aThreadWithoutAScopeIsCheckedWithoutCreatingItsDefaultStream() throws Exception {
		// Every acquire runs this check: a thread with no scope (a request or batch thread) must not
		// get a default stream for it, which the backend would keep until the context closes.
		AtomicInteger backendCalls = new AtomicInteger();
		DeviceBackend backend = (DeviceBackend) Proxy.newProxyInstance(getClass().getClassLoader(),
				new Class<?>[] { DeviceBackend.class }, (proxy, method, args) -> {
					backendCalls.incrementAndGet();
					throw new UnsupportedOperationException(method.getName());
				});
		ContextState lifecycle = new ContextState(1, null, null);
		Streams streams = new Streams(lifecycle, null, null, backend, DefaultStreamMode.PER_THREAD);
		LeaseChecks checks = new LeaseChecks(lifecycle, streams, new PoolLedger(4, new int[] { 4, 2 }));
		CompletableFuture.runAsync(() -> checks.checkNested(StreamPriority.NORMAL, 4)).get(10, TimeUnit.SECONDS);
		assertThat(backendCalls).hasValue(0);
	}

}
