package dev.gpucompute.autoconfigure.metrics;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.ToDoubleFunction;

import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.binder.MeterBinder;

import dev.gpucompute.GpuContext;
import dev.gpucompute.graph.GpuGraphs;
import dev.gpucompute.graph.GraphStats;
import org.jspecify.annotations.Nullable;

/**
 * Binds the graph meters of one {@link GpuContext} (docs/observability.md, "Graphs"): counts and
 * gauges read the context's {@link GpuGraphs#stats()}, so none is missed before binding and a replay
 * costs the listener nothing; the capture and instantiation timers, by graph name, come from the
 * {@link MicrometerGpuListener}.
 *
 * <table>
 * <caption>Meters</caption>
 * <tr><th>meter</th><th>type</th><th>source</th></tr>
 * <tr><td>{@code gpu.graph.replays}</td><td>function counter</td><td>graph launches and replays</td></tr>
 * <tr><td>{@code gpu.graph.live}, {@code gpu.graph.nodes}</td><td>gauges</td><td>graphs not closed, and the
 * operations they hold</td></tr>
 * <tr><td>{@code gpu.graph.captures} (tag {@code outcome}: {@code success}, {@code failed})</td>
 * <td>function counter</td><td>captures that gave a graph (new or update), and captures ended without
 * one</td></tr>
 * <tr><td>{@code gpu.graph.updates} (tag {@code outcome}: {@code in_place}, {@code reinstantiated})</td>
 * <td>function counter</td><td>captures applied to a graph, in place or by a new instantiation</td></tr>
 * <tr><td>{@code gpu.graph.capture} (tag {@code graph})</td><td>timer</td><td>capture time, from begin to
 * end</td></tr>
 * <tr><td>{@code gpu.graph.instantiate} (tag {@code graph})</td><td>timer</td><td>instantiation or update
 * time</td></tr>
 * </table>
 *
 * <p>Graph names are chosen by the application's code (a cache names all its graphs alike), so the
 * {@code graph} tag's cardinality is bounded by the code, as the {@code batcher} tag's is.
 */
public final class GpuGraphMetrics implements MeterBinder {

	private final GpuGraphs graphs;

	private final @Nullable MicrometerGpuListener listener;

	private final Iterable<Tag> tags;

	/**
	 * Graph meters for {@code context}.
	 * @param context the context to observe
	 * @param listener the listener the context was opened with (the source of the timers), or {@code null}
	 */
	public GpuGraphMetrics(GpuContext context, @Nullable MicrometerGpuListener listener) {
		this.graphs = GpuGraphs.of(context);
		this.listener = listener;
		this.tags = GpuMetrics.deviceTags(context.device());
	}

	@Override
	public void bindTo(MeterRegistry registry) {
		counter(registry, GpuMeterNames.GRAPH_REPLAYS, "Graph launches and replays", Tags.empty(), GraphStats::replays);
		Gauge.builder(GpuMeterNames.GRAPH_LIVE, this.graphs, (g) -> g.stats().live())
			.description("Graphs captured and not closed yet")
			.tags(this.tags)
			.register(registry);
		Gauge.builder(GpuMeterNames.GRAPH_NODES, this.graphs, (g) -> g.stats().nodes())
			.description("Operations (kernel launches, copies, fills) in the live graphs")
			.tags(this.tags)
			.register(registry);
		counter(registry, GpuMeterNames.GRAPH_CAPTURES, "Graph captures, by outcome",
				Tags.of(GpuMeterNames.TAG_OUTCOME, GpuMeterNames.OUTCOME_SUCCESS), GraphStats::captured);
		counter(registry, GpuMeterNames.GRAPH_CAPTURES, "Graph captures, by outcome", Tags.of(GpuMeterNames.TAG_OUTCOME, "failed"),
				GraphStats::failedCaptures);
		counter(registry, GpuMeterNames.GRAPH_UPDATES, "Graphs updated by a new capture, in place or by a new instantiation",
				Tags.of(GpuMeterNames.TAG_OUTCOME, "in_place"), GraphStats::updatesInPlace);
		counter(registry, GpuMeterNames.GRAPH_UPDATES, "Graphs updated by a new capture, in place or by a new instantiation",
				Tags.of(GpuMeterNames.TAG_OUTCOME, "reinstantiated"), GraphStats::reinstantiations);
		if (this.listener != null) {
			this.listener.add(new Bound(registry));
		}
	}

	private void counter(MeterRegistry registry, String name, String description, Tags extra,
			ToDoubleFunction<GraphStats> figure) {
		FunctionCounter.builder(name, this.graphs, (g) -> figure.applyAsDouble(g.stats()))
			.description(description)
			.tags(this.tags)
			.tags(extra)
			.register(registry);
	}

	/** The timers of one registry, by graph name. */
	final class Bound {

		private final MeterRegistry registry;

		private final Map<String, Timer[]> timers = new ConcurrentHashMap<>();

		Bound(MeterRegistry registry) {
			this.registry = registry;
		}

		void captured(String graph, long captureNanos, long instantiateNanos) {
			Timer[] pair = timers(graph);
			pair[0].record(Math.max(captureNanos, 0), TimeUnit.NANOSECONDS);
			pair[1].record(Math.max(instantiateNanos, 0), TimeUnit.NANOSECONDS);
		}

		void updated(String graph, long nanos) {
			timers(graph)[1].record(Math.max(nanos, 0), TimeUnit.NANOSECONDS);
		}

		private Timer[] timers(String graph) {
			return this.timers.computeIfAbsent(graph, (name) -> {
				Tags graphTags = Tags.concat(GpuGraphMetrics.this.tags, GpuMeterNames.TAG_GRAPH, name);
				return new Timer[] {
						Timer.builder(GpuMeterNames.GRAPH_CAPTURE)
							.description("Time a graph capture took, from its beginning to its end (the work issued included)")
							.tags(graphTags)
							.register(this.registry),
						Timer.builder(GpuMeterNames.GRAPH_INSTANTIATE)
							.description("Time a captured graph took to instantiate, or to update an instantiated graph")
							.tags(graphTags)
							.register(this.registry) };
			});
		}

	}

}
