package dev.gpucompute.benchmarks;

import java.util.concurrent.TimeUnit;

import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Threads;

import dev.gpucompute.Backend;
import dev.gpucompute.GpuContext;
import dev.gpucompute.StreamLease;
import dev.gpucompute.StreamPool;
import dev.gpucompute.StreamPool.PoolStats;
import dev.gpucompute.StreamPriority;
import dev.gpucompute.spi.DeviceBackend;
import dev.gpucompute.spi.NativeStream;

/**
 * Benchmark 1: a stream lease (acquire + release through {@link StreamPool}) against creating and
 * destroying a stream on the same backend through the SPI, uncontended and with 2 and 8 threads
 * sharing one pool. The pool holds 8 streams up front, so 8 threads never wait for a stream: the
 * contended figures show the cost of the pool's bookkeeping, not of queueing.
 *
 * <p>The {@code leakDetection} variants lease from a second pool with leak detection on (the
 * Spring starter's default, 60 s): each lease then captures its acquisition stack, registers the
 * leak safety net and schedules the report. The {@code deepStack} variants lease from 100 frames
 * down, about the depth of a request handler under Spring MVC and Tomcat, since capturing a stack
 * costs more the deeper it is; the one without leak detection isolates the cost of the recursion.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@State(Scope.Benchmark)
public class LeaseBenchmark {

	@Param({ "CPU" })
	public Backend backend;

	private GpuContext context;

	private StreamPool pool;

	private GpuContext watchedContext;

	private StreamPool watched;

	private DeviceBackend raw;

	/** Frames below the benchmark method for the deepStack variants. */
	private static final int DEPTH = 100;

	@Setup(Level.Trial)
	public void open() {
		this.context = Bench.open(this.backend, (builder) -> builder.poolSize(8).maxSize(32));
		this.pool = this.context.streams();
		this.watchedContext = Bench.open(this.backend,
				(builder) -> builder.poolSize(8).maxSize(32).leakDetectionThreshold(java.time.Duration.ofSeconds(60)));
		this.watched = this.watchedContext.streams();
		this.raw = Bench.openRaw(this.backend);
	}

	@TearDown(Level.Trial)
	public void close() {
		PoolStats stats = this.pool.stats();
		if (stats.active() != 0 || stats.created() != 8) {
			throw new IllegalStateException("The pool did not end full and unchanged: " + stats);
		}
		PoolStats watchedStats = this.watched.stats();
		if (watchedStats.active() != 0 || watchedStats.created() != 8 || watchedStats.leaksDetected() != 0) {
			throw new IllegalStateException("The watched pool did not end full and unchanged: " + watchedStats);
		}
		this.context.close();
		this.watchedContext.close();
		this.raw.close();
	}

	private StreamLease lease() {
		try (StreamLease lease = this.pool.acquire()) {
			return lease;
		}
	}

	private static StreamLease lease(StreamPool pool, int depth) {
		if (depth > 0) {
			return lease(pool, depth - 1);
		}
		try (StreamLease lease = pool.acquire()) {
			return lease;
		}
	}

	private NativeStream createDestroy() {
		NativeStream stream = this.raw.createStream(StreamPriority.NORMAL, "bench");
		stream.destroy();
		return stream;
	}

	@Benchmark
	@Threads(1)
	public StreamLease ours_lease_1thread() {
		return lease();
	}

	@Benchmark
	@Threads(1)
	public StreamLease ours_lease_1thread_leakDetection() {
		return lease(this.watched, 0);
	}

	@Benchmark
	@Threads(1)
	public StreamLease ours_lease_1thread_deepStack() {
		return lease(this.pool, DEPTH);
	}

	@Benchmark
	@Threads(1)
	public StreamLease ours_lease_1thread_deepStack_leakDetection() {
		return lease(this.watched, DEPTH);
	}

	@Benchmark
	@Threads(2)
	public StreamLease ours_lease_2threads() {
		return lease();
	}

	@Benchmark
	@Threads(8)
	public StreamLease ours_lease_8threads() {
		return lease();
	}

	@Benchmark
	@Threads(1)
	public NativeStream baseline_createDestroy_1thread() {
		return createDestroy();
	}

	@Benchmark
	@Threads(2)
	public NativeStream baseline_createDestroy_2threads() {
		return createDestroy();
	}

	@Benchmark
	@Threads(8)
	public NativeStream baseline_createDestroy_8threads() {
		return createDestroy();
	}

}
