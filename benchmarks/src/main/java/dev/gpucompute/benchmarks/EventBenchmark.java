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

import dev.gpucompute.Backend;
import dev.gpucompute.EventRegistry;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuEvent;
import dev.gpucompute.GpuStream;
import dev.gpucompute.StreamLease;
import dev.gpucompute.StreamPriority;
import dev.gpucompute.spi.DeviceBackend;
import dev.gpucompute.spi.NativeEvent;
import dev.gpucompute.spi.NativeStream;

/**
 * Benchmark 5: record an event on an idle stream and query it.
 * <ul>
 * <li>{@code ours_registryEvent}: an event from {@link EventRegistry#create()} (recycled), recorded,
 * queried and closed (back to the registry).</li>
 * <li>{@code ours_reusedEvent}: one event kept open, recorded and queried: the floor.</li>
 * <li>{@code baseline_freshEvent}: a backend event created, recorded, queried and destroyed through
 * the SPI every time.</li>
 * </ul>
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@State(Scope.Thread)
public class EventBenchmark {

	@Param({ "CPU" })
	public Backend backend;

	private GpuContext context;

	private EventRegistry events;

	private StreamLease lease;

	private GpuStream stream;

	private GpuEvent held;

	private DeviceBackend raw;

	private NativeStream rawStream;

	@Setup(Level.Trial)
	public void open() {
		this.context = Bench.open(this.backend, (builder) -> builder);
		this.events = this.context.events();
		this.lease = this.context.streams().acquire();
		this.stream = this.lease.stream();
		this.held = this.events.create();
		this.raw = Bench.openRaw(this.backend);
		this.rawStream = this.raw.createStream(StreamPriority.NORMAL, "bench");
	}

	@TearDown(Level.Trial)
	public void close() {
		this.held.close();
		int inUse = this.events.inUse();
		this.lease.close();
		this.context.close();
		this.rawStream.destroy();
		this.raw.close();
		if (inUse != 0) {
			throw new IllegalStateException(inUse + " events were not returned to the registry");
		}
	}

	@Benchmark
	public boolean ours_registryEvent() {
		try (GpuEvent event = this.events.create()) {
			event.record(this.stream);
			return event.isComplete();
		}
	}

	@Benchmark
	public boolean ours_reusedEvent() {
		this.held.record(this.stream);
		return this.held.isComplete();
	}

	@Benchmark
	public boolean baseline_freshEvent() {
		NativeEvent event = this.raw.createEvent(false);
		event.record(this.rawStream);
		boolean done = event.query();
		event.destroy();
		return done;
	}

}
