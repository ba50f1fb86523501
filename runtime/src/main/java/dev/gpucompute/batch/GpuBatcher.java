package dev.gpucompute.batch;

import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.function.Function;

import dev.gpucompute.ContextClosedException;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuDevices;
import dev.gpucompute.GpuException;
import dev.gpucompute.PoolExhaustedException;
import dev.gpucompute.PoolTooSmallException;
import dev.gpucompute.StreamPriority;
import dev.gpucompute.settings.InvalidSettingException;
import dev.gpucompute.settings.Limits;
import dev.gpucompute.settings.StreamSettings;
import org.jspecify.annotations.Nullable;

/**
 * A dynamic batcher: many small concurrent submissions become few full handler calls, each on a
 * leased stream. Callers {@link #submit(Object)} items and get a {@link CompletableFuture} of their
 * own result, or {@link #call(Object)} and wait for it (running the batch themselves when the batcher
 * is idle); items with the same batch key are grouped, and a {@link BatchHandler} runs each batch
 * and returns one result (or failure) per item.
 *
 * <p><b>Continuous batching.</b> The batcher has {@code maxConcurrentBatches} dispatch threads. An
 * item that finds the batcher idle is dispatched at once (no added latency when idle). While
 * batches run, items accumulate, and a free dispatcher forms the next batch as soon as it can: with
 * the default {@code maxQueueDelay} of zero at once, with whatever waits. A positive delay lets
 * batches fill: while other batches run, the oldest item waits at most the delay (or until its key
 * has {@code maxBatchSize} items); right after a batch of n items, the waiting items are held until
 * n items wait (the callers that batch set free coming back), a full batch, or the delay since it
 * ended, whichever comes first. Nothing is held once the delay has passed since the last batch, so
 * an item that finds the batcher idle goes at once whatever the delay. The batch is taken from the
 * queue only once its stream is leased, so everything that arrived while the dispatcher waited for
 * a stream joins it. Batches are formed oldest key first; within a key, items keep their order.
 *
 * <p><b>Back-pressure, deadlines, cancellation.</b> At most {@code maxQueued} items wait; beyond,
 * {@code submit} throws {@link BatchQueueFullException} at once, with a retry-after hint. An item
 * whose deadline ({@code timeout}, or a shorter one given to {@link #submit(Object, Duration)})
 * passes in the queue completes with {@link BatchTimeoutException} and is never run. A future
 * cancelled (or completed) by its caller before dispatch is dropped from the queue.
 *
 * <p><b>Failures.</b> A handler that throws, or a kernel failure reported while the batch runs or
 * when the batcher waits for the batch's stream after the handler, fails that batch's items and no
 * others; {@link Batch#fail(int, Throwable)} fails single items. The stream goes back to the pool
 * clean (the runtime's failure rules), so the next batch is not affected.
 *
 * <p><b>Streams.</b> Each batch holds one leased stream, current while its handler runs: the
 * handler's launches and copies go there. A handler should do its work on that stream rather than
 * lease more; a lease (or a stream-parallel group) that the pool could only grant by taking back the
 * batch's own stream fails at once with {@link PoolTooSmallException} instead of waiting for itself
 * until the acquire timeout.
 *
 * <p><b>Close.</b> {@link #close()} stops accepting items, lets queued items be dispatched within
 * the drain timeout and then completes whatever is still queued or running exceptionally with a
 * {@link ContextClosedException} that says it was abandoned at close: no future is left incomplete.
 * A batcher belongs to its {@link GpuContext}, which closes it (within the context's drain timeout)
 * before it stops its stream pool ({@link #openBatchers(GpuContext)} lists them), also through {@link GpuContext#drain(Duration)} and
 * {@link GpuDevices#close()}.
 *
 * <p>Thread-safe. Futures complete on the batcher's threads (or the context's completion threads
 * for timeouts, or the closing thread when abandoned): dependent stages that do more than hand the
 * result over should use the {@code *Async} variants. The batcher owns its threads; the caller owns
 * the batcher and closes it (or leaves it to the context's close).
 *
 * @param <I> item type
 * @param <O> result type
 */
public interface GpuBatcher<I, O> extends AutoCloseable {

	/**
	 * A builder of a batcher on {@code context}'s stream pool, running batches with {@code handler}.
	 * @param context the context whose streams the batches run on; it closes the batcher at the latest
	 * when it closes
	 * @param handler runs one batch; called on the batcher's threads
	 */
	static <I, O> Builder<I, O> builder(GpuContext context, BatchHandler<I, O> handler) {
		return new Builder<>(context, handler);
	}

	/**
	 * Queues an item for the next batch of its key.
	 * @return the item's result, or its failure: the batch's ({@link BatchHandler} threw, a kernel
	 * failed), its own ({@link Batch#fail}), {@link BatchTimeoutException} when its deadline passed
	 * in the queue, or {@link ContextClosedException} when it was abandoned at close
	 * @throws BatchQueueFullException when {@code maxQueued} items wait already (nothing is queued)
	 * @throws ContextClosedException when the batcher is closed or closing
	 * @throws NullPointerException when {@code item} is null
	 */
	CompletableFuture<O> submit(I item);

	/**
	 * Queues an item with a deadline of its own: it times out after {@code timeout} in the queue, or
	 * after the batcher's {@code timeout} if that is shorter (an item may shorten the batcher's
	 * deadline, never extend it, as Triton's queue policy allows).
	 * @throws IllegalArgumentException when {@code timeout} is zero, negative or beyond 292 years
	 * @see #submit(Object)
	 */
	CompletableFuture<O> submit(I item, Duration timeout);

	/**
	 * Submits an item and waits for its result, for callers that would block on the future anyway
	 * (a request thread). When the batcher is idle (nothing queued, no batch running, a batch slot
	 * free) the item runs as a batch of one on the calling thread, without the hand-off to a
	 * dispatch thread and back; otherwise it waits in the queue like {@link #submit(Object)}'s
	 * items. Either way it is the same batch, handler and failure rules.
	 * @return the item's result
	 * @throws RuntimeException the item's failure as {@link #submit(Object)}'s future would carry it
	 * (an {@link Error} as itself; a checked exception of the handler wrapped in a {@link GpuException})
	 * @throws BatchQueueFullException when {@code maxQueued} items wait already
	 * @throws ContextClosedException when the batcher is closed or closing
	 * @throws GpuException when interrupted while waiting (the item is cancelled, the interrupt kept)
	 */
	O call(I item);

	/**
	 * Stops accepting items ({@code submit} then throws {@link ContextClosedException}); queued
	 * items are still dispatched, without waiting for fuller batches. Returns at once. Idempotent.
	 */
	void shutdown();

	/**
	 * Waits until, after {@link #shutdown()}, no item is queued and no batch runs any more.
	 * @return whether that happened within {@code timeout}; false at once when not shut down
	 * (interrupted: returns at once, with the interrupt status kept)
	 */
	boolean awaitTermination(Duration timeout);

	/**
	 * Stops accepting items and abandons those not finished: queued items and items of running
	 * batches complete exceptionally now, with a {@link ContextClosedException} saying they were
	 * abandoned at close (a running handler goes on, but its results are dropped). Idempotent.
	 * @return the items abandoned
	 */
	int shutdownNow();

	/**
	 * Closes the batcher: stops accepting items, waits up to the drain timeout (the context's, unless
	 * set on the builder) for queued items to be dispatched and running batches to finish, then
	 * abandons the rest ({@link #shutdownNow()}). Returns with every future complete. Idempotent.
	 */
	void close();

	/**
	 * The open batchers of {@code context}, in the order they were built; a snapshot. The context
	 * closes them first when it drains or closes, while its pool still leases streams.
	 * @throws dev.gpucompute.GpuException when {@code context} was not opened by the gpu-compute runtime
	 */
	static java.util.List<GpuBatcher<?, ?>> openBatchers(GpuContext context) {
		return Builder.openBatchers(Objects.requireNonNull(context, "context"));
	}

	/** Whether {@link #shutdown()} (or close) was called. */
	boolean isShutdown();

	/** The batcher's name, unique among the open batchers of its context (the {@code batcher} meter tag). */
	String name();

	/** The context whose streams its batches run on. */
	GpuContext context();

	/** The most items one batch takes. */
	int maxBatchSize();

	/** How long the first item of a batch may wait for more before the batch runs. */
	Duration maxQueueDelay();

	/** The most items waiting; a submission beyond it fails with {@link BatchQueueFullException}. */
	int maxQueued();

	/** The priority of the streams its batches lease. */
	StreamPriority priority();

	/** The deadline of an item in the queue; {@link Duration#ZERO} for none. */
	Duration timeout();

	/** The most batches it runs at once, each on a stream of its own. */
	int maxConcurrentBatches();

	/** Items waiting now; cheaper than {@link #stats()} for a gauge. */
	int queued();

	/** A consistent snapshot of the batcher's figures. */
	BatcherStats stats();


	/**
	 * Configures and builds a {@link GpuBatcher}. The settings follow Triton Inference Server's dynamic
	 * batcher: {@code maxBatchSize} (Triton's max_batch_size, and its one preferred batch size),
	 * {@code maxQueueDelay} (max_queue_delay_microseconds, here applied only right after or during
	 * batches, never to an item that finds the batcher idle),
	 * {@code maxQueued} (max_queue_size, but always bounded), {@code timeout} (default_timeout_microseconds
	 * with the REJECT action; a submit may shorten it), {@code priority} (the stream pool's priority of
	 * the batches) and {@code maxConcurrentBatches} (the instance count). Not thread-safe; use once.
	 */
	public static final class Builder<I, O> {

		private final GpuContext context;

		private final BatchHandler<I, O> handler;

		private String name = "batcher";

		private Function<? super I, ?> keyOf = (item) -> null;

		private Settings settings = Settings.DEFAULTS;

		Builder(GpuContext context, BatchHandler<I, O> handler) {
			this.context = Objects.requireNonNull(context, "context");
			this.handler = Objects.requireNonNull(handler, "handler");
		}

		/**
		 * The name (default {@code batcher}): letters, digits, '-', '_' and '.', 1 to 64 characters,
		 * unique among the open batchers of the context; it names the threads and tags the meters.
		 */
		public Builder<I, O> name(String name) {
			this.name = Settings.checkName(name);
			return this;
		}

		/**
		 * The batch key of an item (default: every item has the same key): only items with equal keys
		 * ({@code equals}/{@code hashCode}) share a batch. Called once per item, on the submitting thread.
		 */
		public Builder<I, O> batchKey(Function<? super I, ?> keyOf) {
			this.keyOf = Objects.requireNonNull(keyOf, "keyOf");
			return this;
		}

		/** The settings as a whole (see {@link Settings}), replacing those set before. */
		public Builder<I, O> settings(Settings settings) {
			this.settings = Objects.requireNonNull(settings, "settings");
			return this;
		}

		/** Most items per batch: 1 to {@value Settings#MAX_BATCH_SIZE} (default 64). */
		public Builder<I, O> maxBatchSize(int maxBatchSize) {
			this.settings = this.settings.withMaxBatchSize(maxBatchSize);
			return this;
		}

		/**
		 * Longest time items are held back from a free dispatcher in the hope of a fuller batch
		 * (default zero: a free dispatcher takes what waits): while other batches run, counted from
		 * the oldest item's arrival; right after a batch of n items, counted from its end, and only
		 * until n items wait. An item that finds the batcher idle (no batch within the delay) goes at
		 * once.
		 */
		public Builder<I, O> maxQueueDelay(Duration delay) {
			this.settings = this.settings.withMaxQueueDelay(delay);
			return this;
		}

		/** Most items waiting; beyond, submit fails at once: 1 to {@value Settings#MAX_QUEUED} (default 1024). */
		public Builder<I, O> maxQueued(int maxQueued) {
			this.settings = this.settings.withMaxQueued(maxQueued);
			return this;
		}

		/** The priority of the batches' stream leases (default {@link StreamPriority#NORMAL}). */
		public Builder<I, O> priority(StreamPriority priority) {
			this.settings = this.settings.withPriority(priority);
			return this;
		}

		/** Longest wait of an item in the queue before it times out; zero (the default) for none. */
		public Builder<I, O> timeout(Duration timeout) {
			this.settings = this.settings.withTimeout(timeout);
			return this;
		}

		/**
		 * Most batches run at once, each on its own stream and dispatch thread (default 1): 1 to the
		 * pool's maximum size and the priority's limit.
		 */
		public Builder<I, O> maxConcurrentBatches(int batches) {
			this.settings = this.settings.withMaxConcurrentBatches(batches);
			return this;
		}

		/**
		 * Longest wait for a batch's stream lease (default: the pool's acquire timeout); past it the
		 * batch's items fail with {@link PoolExhaustedException}.
		 */
		public Builder<I, O> acquireTimeout(Duration timeout) {
			this.settings = this.settings.withAcquireTimeout(Objects.requireNonNull(timeout, "acquireTimeout"));
			return this;
		}

		/** Longest wait at {@link GpuBatcher#close()} for queued and running items (default: the context's drain timeout). */
		public Builder<I, O> drainTimeout(Duration timeout) {
			this.settings = this.settings.withDrainTimeout(Objects.requireNonNull(timeout, "drainTimeout"));
			return this;
		}

		/**
		 * Builds the batcher, starts its dispatch threads and registers it with its context.
		 * @throws IllegalArgumentException when {@code maxConcurrentBatches} exceeds what the pool can lease
		 * at the batcher's priority
		 * @throws IllegalStateException when an open batcher of the context has the same name
		 * @throws ContextClosedException when the context is closing or closed
		 */
		public GpuBatcher<I, O> build() {
			StreamPriority priority = this.settings.priority();
			this.settings.checkedFor(Math.min(this.context.streams().maxSize(), this.context.streams().priorityLimit(priority)));
			try {
				@SuppressWarnings("unchecked")
				GpuBatcher<I, O> batcher = (GpuBatcher<I, O>) Implementation.OPEN_BATCHER.handle()
					.invokeExact(this.context, (BatchHandler<?, ?>) this.handler, this.name,
							(Function<?, ?>) this.keyOf, this.settings);
				return batcher;
			}
			catch (RuntimeException | Error ex) {
				throw ex;
			}
			catch (Throwable ex) {
				throw new java.lang.reflect.UndeclaredThrowableException(ex);
			}
		}

		/** The settings so far, as an immutable value. */
		public Settings settings() {
			return this.settings;
		}

		@SuppressWarnings("unchecked")
		static java.util.List<GpuBatcher<?, ?>> openBatchers(GpuContext context) {
			try {
				return (java.util.List<GpuBatcher<?, ?>>) Implementation.OPEN_BATCHERS.handle().invokeExact(context);
			}
			catch (RuntimeException | Error ex) {
				throw ex;
			}
			catch (Throwable ex) {
				throw new java.lang.reflect.UndeclaredThrowableException(ex);
			}
		}

		/**
		 * The runtime's doors for batchers: public static methods of
		 * {@code dev.gpucompute.internal.context.Engine}, found once by name through the API's class
		 * loader, as {@code GpuContextBuilder} finds the doors for contexts (the API ships with its
		 * implementation and names no implementation type). A door that cannot be found answers every
		 * call with the same {@link IllegalStateException} saying why.
		 */
		private record Implementation(java.lang.invoke.@Nullable MethodHandle found, @Nullable String problem, @Nullable Throwable cause) {

			static final String ENGINE = "dev.gpucompute.internal.context.Engine";

			static final Implementation OPEN_BATCHER = find("openBatcher", GpuBatcher.class, GpuContext.class,
					BatchHandler.class, String.class, Function.class, Settings.class);

			static final Implementation OPEN_BATCHERS = find("openBatchers", java.util.List.class, GpuContext.class);

			private static Implementation find(String name, Class<?> returns, Class<?>... parameters) {
				java.lang.invoke.MethodType type = java.lang.invoke.MethodType.methodType(returns, parameters);
				try {
					Class<?> engine = Class.forName(ENGINE, true, GpuBatcher.class.getClassLoader());
					return new Implementation(java.lang.invoke.MethodHandles.publicLookup().findStatic(engine, name, type),
							null, null);
				}
				catch (ClassNotFoundException ex) {
					return new Implementation(null, "The implementation of the gpu-compute API is missing: no " + ENGINE
							+ " on the class path (an incomplete gpu-compute-runtime jar?)", ex);
				}
				catch (ReflectiveOperationException | LinkageError ex) {
					return new Implementation(null, "The implementation of the gpu-compute API (" + ENGINE
							+ ") has no public static " + name + " " + type + " (gpu-compute jars of different versions?)",
							ex);
				}
			}

			java.lang.invoke.MethodHandle handle() {
				if (this.found == null) {
					throw new IllegalStateException(this.problem, this.cause);
				}
				return this.found;
			}

		}

	}

	/**
	 * The settings of a batcher ({@code gpu.batching.<name>.*} in the Spring Boot starter): their
	 * defaults ({@link #DEFAULTS}), limits and checks, held here once; {@link Builder}'s setters and the
	 * starter's properties map onto it. Immutable; each value is checked when the record is made.
	 *
	 * @param maxBatchSize most items per batch, 1 to {@link #MAX_BATCH_SIZE}
	 * @param maxQueueDelay longest hold for a fuller batch (see {@link Builder#maxQueueDelay})
	 * @param maxQueued most items waiting, 1 to {@link #MAX_QUEUED}
	 * @param priority the priority of the batches' stream leases
	 * @param timeout longest wait of an item in the queue; zero for none
	 * @param maxConcurrentBatches most batches at once, 1 to what the pool can lease at the priority
	 * (checked when the batcher is built)
	 * @param acquireTimeout longest wait for a batch's lease, or {@code null} for the pool's
	 * @param drainTimeout longest wait at close, or {@code null} for the context's
	 */
	record Settings(int maxBatchSize, Duration maxQueueDelay, int maxQueued, StreamPriority priority, Duration timeout,
			int maxConcurrentBatches, @Nullable Duration acquireTimeout, @Nullable Duration drainTimeout) {

		/** Most items per batch. */
		public static final int MAX_BATCH_SIZE = 1 << 16;

		/** Most items a queue may hold. */
		public static final int MAX_QUEUED = 1 << 24;

		/**
		 * The defaults: batches of up to 64 items, no hold for fuller batches, 1024 items queued, normal
		 * priority, no item timeout, one batch at a time, the pool's acquire timeout and the context's
		 * drain timeout.
		 */
		public static final Settings DEFAULTS = new Settings(64, Duration.ZERO, 1024, StreamPriority.NORMAL, Duration.ZERO,
				1, null, null);

		/**
		 * Checks each value.
		 * @throws InvalidSettingException when one is out of its limits
		 * @throws NullPointerException when a required value is missing
		 */
		public Settings {
			Limits.within(maxBatchSize, 1, MAX_BATCH_SIZE, "maxBatchSize");
			Limits.nanos(maxQueueDelay, "maxQueueDelay");
			Limits.within(maxQueued, 1, MAX_QUEUED, "maxQueued");
			Objects.requireNonNull(priority, "priority");
			Limits.nanos(timeout, "timeout");
			Limits.within(maxConcurrentBatches, 1, StreamSettings.MAX_STREAMS, "maxConcurrentBatches");
			if (acquireTimeout != null) {
				Limits.nanos(acquireTimeout, "acquireTimeout");
			}
			if (drainTimeout != null) {
				Limits.nanos(drainTimeout, "drainTimeout");
			}
		}

		/**
		 * These settings, once {@code maxConcurrentBatches} is checked against the streams the pool can
		 * lease at the batcher's priority.
		 * @throws InvalidSettingException ({@link InvalidSettingException.Problem#EXCEEDS}) when it is larger
		 */
		public Settings checkedFor(int leasable) {
			if (this.maxConcurrentBatches > leasable) {
				throw new InvalidSettingException("maxConcurrentBatches", InvalidSettingException.Problem.EXCEEDS, leasable,
						"maxConcurrentBatches (" + this.maxConcurrentBatches + ") exceeds the " + leasable
								+ " streams the pool can lease at priority " + this.priority);
			}
			return this;
		}

		/**
		 * {@code name} when it can name a batcher: 1 to 64 letters, digits, '.', '_' or '-'.
		 * @throws InvalidSettingException when it cannot
		 */
		public static String checkName(String name) {
			Objects.requireNonNull(name, "name");
			if (!name.matches("[A-Za-z0-9._-]{1,64}")) {
				throw new InvalidSettingException("name", InvalidSettingException.Problem.MALFORMED, null,
						"A batcher name must be 1 to 64 letters, digits, '.', '_' or '-', got '" + name + "'");
			}
			return name;
		}

		/** With batches of at most {@code maxBatchSize} items. */
		public Settings withMaxBatchSize(int maxBatchSize) {
			return new Settings(maxBatchSize, this.maxQueueDelay, this.maxQueued, this.priority, this.timeout,
					this.maxConcurrentBatches, this.acquireTimeout, this.drainTimeout);
		}

		/** With {@code maxQueueDelay}. */
		public Settings withMaxQueueDelay(Duration maxQueueDelay) {
			return new Settings(this.maxBatchSize, maxQueueDelay, this.maxQueued, this.priority, this.timeout,
					this.maxConcurrentBatches, this.acquireTimeout, this.drainTimeout);
		}

		/** With at most {@code maxQueued} items waiting. */
		public Settings withMaxQueued(int maxQueued) {
			return new Settings(this.maxBatchSize, this.maxQueueDelay, maxQueued, this.priority, this.timeout,
					this.maxConcurrentBatches, this.acquireTimeout, this.drainTimeout);
		}

		/** With leases of {@code priority}. */
		public Settings withPriority(StreamPriority priority) {
			return new Settings(this.maxBatchSize, this.maxQueueDelay, this.maxQueued, priority, this.timeout,
					this.maxConcurrentBatches, this.acquireTimeout, this.drainTimeout);
		}

		/** With an item timeout of {@code timeout} (zero: none). */
		public Settings withTimeout(Duration timeout) {
			return new Settings(this.maxBatchSize, this.maxQueueDelay, this.maxQueued, this.priority, timeout,
					this.maxConcurrentBatches, this.acquireTimeout, this.drainTimeout);
		}

		/** With at most {@code batches} batches at once. */
		public Settings withMaxConcurrentBatches(int batches) {
			return new Settings(this.maxBatchSize, this.maxQueueDelay, this.maxQueued, this.priority, this.timeout,
					batches, this.acquireTimeout, this.drainTimeout);
		}

		/** With {@code acquireTimeout} ({@code null}: the pool's). */
		public Settings withAcquireTimeout(Duration acquireTimeout) {
			return new Settings(this.maxBatchSize, this.maxQueueDelay, this.maxQueued, this.priority, this.timeout,
					this.maxConcurrentBatches, acquireTimeout, this.drainTimeout);
		}

		/** With {@code drainTimeout} ({@code null}: the context's). */
		public Settings withDrainTimeout(Duration drainTimeout) {
			return new Settings(this.maxBatchSize, this.maxQueueDelay, this.maxQueued, this.priority, this.timeout,
					this.maxConcurrentBatches, this.acquireTimeout, drainTimeout);
		}

	}

	/**
	 * A snapshot of a {@link GpuBatcher}'s figures. Every item that {@code submit} accepted ends in
	 * exactly one of {@code expired}, {@code cancelled}, {@code abandoned} or {@code dispatched}, or is
	 * still {@code queued}; a dispatched item's future is completed by its batch ({@code succeeded} or
	 * {@code failed}) unless its caller or the batcher's close completed it first.
	 *
	 * @param name the batcher's name
	 * @param queued items waiting now
	 * @param runningBatches batches being formed or run now (a lease being acquired counts)
	 * @param submitted items accepted since the batcher was built
	 * @param rejected items refused because the queue was full ({@link BatchQueueFullException})
	 * @param expired items whose deadline passed in the queue ({@link BatchTimeoutException})
	 * @param cancelled items dropped before dispatch because their future was cancelled or completed by
	 * the caller
	 * @param abandoned items completed exceptionally at close, queued or running when the drain
	 * timeout passed
	 * @param batches batches handed to the handler
	 * @param dispatched items handed to the handler
	 * @param succeeded items whose future got their result
	 * @param failed items whose future got their batch's or their own failure
	 * @param maxBatchSize most items per batch
	 * @param maxQueued most items waiting
	 */
	public record BatcherStats(String name, int queued, int runningBatches, long submitted, long rejected, long expired,
			long cancelled, long abandoned, long batches, long dispatched, long succeeded, long failed, int maxBatchSize,
			int maxQueued) {

		/** Mean items per batch so far; 0 before the first batch. */
		public double meanBatchSize() {
			return (this.batches == 0) ? 0 : (double) this.dispatched / this.batches;
		}

	}

}
