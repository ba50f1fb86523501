package dev.gpucompute.autoconfigure.metrics;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import dev.gpucompute.Backend;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuLauncher;
import dev.gpucompute.Kernel;
import dev.gpucompute.settings.KernelTiming;
import dev.gpucompute.LaunchConfig;
import dev.gpucompute.StreamLease;
import dev.gpucompute.graph.GpuGraph;
import dev.gpucompute.graph.GpuGraphs;
import dev.gpucompute.graph.GraphCapture;
import dev.gpucompute.graph.GraphCaptureException;

/**
 * The {@code gpu.graph.*} meters ({@link GpuGraphMetrics}, bound with {@link GpuMetrics}) on a real
 * CPU-backend context: replays, live graphs and their operations, capture outcomes, update outcomes,
 * and the capture and instantiation timers by graph, moving with real captures and replays.
 */
class GpuGraphMetricsTests {

	private static final LaunchConfig ONE = LaunchConfig.linear(1, 1);

	private final SimpleMeterRegistry registry = new SimpleMeterRegistry();

	private GpuContext context;

	private GpuLauncher launcher;

	private Kernel kernel;

	@BeforeEach
	void open() {
		MicrometerGpuListener listener = new MicrometerGpuListener();
		this.context = GpuContext.builder().backend(Backend.CPU).cpuThreads(2).kernelTiming(KernelTiming.OFF)
			.listener(listener).open();
		new GpuMetrics(this.context, listener).bindTo(this.registry);
		this.launcher = this.context.launcher();
		this.kernel = this.launcher.load(GpuMetricsTests.ADD_ONE);
	}

	@AfterEach
	void close() {
		this.context.close();
	}

	private double counter(String name, String... tags) {
		return this.registry.get(name).tags(tags).functionCounter().count();
	}

	private double gauge(String name) {
		return this.registry.get(name).gauge().value();
	}

	@Test
	void graphMetersMoveWithCapturesReplaysAndUpdates() {
		GpuGraphs graphs = GpuGraphs.of(this.context);
		try (StreamLease lease = this.context.streams().acquire();
				var cells = this.launcher.allocate(4, dev.gpucompute.ElementType.INT)) {
			lease.stream().waitFor(cells.stream());
			try (GpuGraph graph = graphs.capture("adds", lease.stream(), () -> {
				this.launcher.launch(this.kernel, ONE, 4, cells);
				this.launcher.launch(this.kernel, ONE, 4, cells);
			})) {
				graph.launch(lease.stream());
				graph.replay(lease.stream()).join();
				graphs.update(graph, lease.stream(), () -> {
					this.launcher.launch(this.kernel, ONE, 4, cells);
					this.launcher.launch(this.kernel, ONE, 4, cells);
				});
				graphs.update(graph, lease.stream(), () -> this.launcher.launch(this.kernel, ONE, 4, cells));
				try (GraphCapture refused = graphs.beginCapture("refused", lease.stream())) {
					assertThatThrownBy(() -> lease.stream().synchronize()).isInstanceOf(GraphCaptureException.class);
				}

				assertThat(counter(GpuMeterNames.GRAPH_REPLAYS)).isEqualTo(2);
				assertThat(gauge(GpuMeterNames.GRAPH_LIVE)).isEqualTo(1);
				assertThat(gauge(GpuMeterNames.GRAPH_NODES)).isEqualTo(1);
				assertThat(counter(GpuMeterNames.GRAPH_CAPTURES, "outcome", "success")).isEqualTo(3);
				assertThat(counter(GpuMeterNames.GRAPH_CAPTURES, "outcome", "failed")).isEqualTo(1);
				assertThat(counter(GpuMeterNames.GRAPH_UPDATES, "outcome", "in_place")).isEqualTo(1);
				assertThat(counter(GpuMeterNames.GRAPH_UPDATES, "outcome", "reinstantiated")).isEqualTo(1);
				Timer capture = this.registry.get(GpuMeterNames.GRAPH_CAPTURE).tags("graph", "adds", "gpu", "0", "backend", "cpu")
					.timer();
				assertThat(capture.count()).isEqualTo(1);
				assertThat(this.registry.get(GpuMeterNames.GRAPH_INSTANTIATE).tags("graph", "adds").timer().count())
					.as("the instantiation and both updates").isEqualTo(3);
				assertThat(this.registry.get(GpuMeterNames.GRAPH_REPLAYS).meter()).isInstanceOf(FunctionCounter.class);
				assertThat(this.registry.get(GpuMeterNames.GRAPH_LIVE).meter()).isInstanceOf(Gauge.class);
			}
		}
		assertThat(gauge(GpuMeterNames.GRAPH_LIVE)).isZero();
		assertThat(gauge(GpuMeterNames.GRAPH_NODES)).isZero();
	}

}
