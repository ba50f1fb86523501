package dev.gpucompute.autoconfigure.metrics;

import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuContextBuilder;
import dev.gpucompute.listener.GpuListener;
import dev.gpucompute.listener.KernelLoad;

/**
 * The {@link GpuListener} that feeds Micrometer: device time of timed launches
 * ({@code gpu.kernel.duration}), lease waits ({@code gpu.streams.acquire}), lease hold times
 * ({@code gpu.streams.usage}), kernel loads that waited for work in flight ({@code gpu.kernel.load.wait};
 * loads before the binding, at start-up, are not recorded), batch sizes and queue waits
 * ({@code gpu.batch.size}, {@code gpu.batch.wait}), graph capture and instantiation times
 * ({@code gpu.graph.capture}, {@code gpu.graph.instantiate}), and registers the per-kernel meters of kernels
 * loaded after start-up and the per-batcher meters of batchers built after it.
 *
 * <p>The listener has to exist before the {@link GpuContext} is opened (it is passed to
 * {@link GpuContextBuilder#listener(GpuListener)}), while the meters' tags (device ordinal, UUID)
 * are only known afterwards. So it starts unbound and does nothing until {@link GpuMetrics} binds it
 * to a registry, the pattern Spring Boot uses for HikariCP's metrics tracker. Spring Boot binds meter
 * binders once all singletons exist; lease waits and timings reported before that are not recorded,
 * while launch counts are not lost because the launch counters read the kernels' own statistics.
 *
 * <p>Thread-safe and cheap: every callback is a volatile read and, once bound, a lookup in a
 * {@code ConcurrentHashMap} keyed by kernel name or a single timer update. No string is built per
 * call. Callbacks never throw.
 *
 * <p>One listener serves one context. Without metrics it costs nothing, because then no listener
 * bean exists and the context keeps {@link GpuListener#NONE}.
 */
public final class MicrometerGpuListener implements GpuListener {

	private static final ListenerMeters[] UNBOUND = new ListenerMeters[0];

	private volatile ListenerMeters[] bound = UNBOUND;

	private volatile GpuGraphMetrics.Bound[] graphs = new GpuGraphMetrics.Bound[0];

	/** Called by {@link GpuGraphMetrics#bindTo}. */
	synchronized void add(GpuGraphMetrics.Bound meters) {
		GpuGraphMetrics.Bound[] current = this.graphs;
		GpuGraphMetrics.Bound[] next = java.util.Arrays.copyOf(current, current.length + 1);
		next[current.length] = meters;
		this.graphs = next;
	}

	/** Called by {@link GpuMetrics#bindTo}; one entry per registry the binder was bound to. */
	synchronized void add(ListenerMeters meters) {
		ListenerMeters[] current = this.bound;
		ListenerMeters[] next = java.util.Arrays.copyOf(current, current.length + 1);
		next[current.length] = meters;
		this.bound = next;
	}

	/** Whether a {@link GpuMetrics} has bound this listener to a registry. */
	public boolean isBound() {
		return this.bound.length > 0;
	}

	@Override
	public void kernelLaunched(String kernel, boolean success) {
		for (ListenerMeters meters : this.bound) {
			meters.kernelSeen(kernel);
		}
	}

	@Override
	public void kernelFailed(String kernel) {
		for (ListenerMeters meters : this.bound) {
			meters.kernelSeen(kernel);
		}
	}

	@Override
	public void kernelTimed(String kernel, long nanos) {
		for (ListenerMeters meters : this.bound) {
			meters.kernelTimed(kernel, nanos);
		}
	}

	@Override
	public void kernelLoaded(KernelLoad load) {
		for (ListenerMeters meters : this.bound) {
			meters.kernelLoaded(load);
			meters.kernelSeen(load.kernel());
		}
	}

	@Override
	public void leaseAcquired(long waitNanos) {
		for (ListenerMeters meters : this.bound) {
			meters.leaseAcquired(waitNanos);
		}
	}

	@Override
	public void leaseReleased(long heldNanos) {
		for (ListenerMeters meters : this.bound) {
			meters.leaseReleased(heldNanos);
		}
	}

	@Override
	public void batcherOpened(String batcher) {
		for (ListenerMeters meters : this.bound) {
			meters.batcherOpened(batcher);
		}
	}

	@Override
	public void batchDispatched(String batcher, int size) {
		for (ListenerMeters meters : this.bound) {
			meters.batchDispatched(batcher, size);
		}
	}

	@Override
	public void batchItemWaited(String batcher, long waitNanos) {
		for (ListenerMeters meters : this.bound) {
			meters.batchItemWaited(batcher, waitNanos);
		}
	}

	@Override
	public void graphCaptured(String graph, int nodes, long captureNanos, long instantiateNanos) {
		for (GpuGraphMetrics.Bound meters : this.graphs) {
			meters.captured(graph, captureNanos, instantiateNanos);
		}
	}

	@Override
	public void graphUpdated(String graph, boolean inPlace, long nanos) {
		for (GpuGraphMetrics.Bound meters : this.graphs) {
			meters.updated(graph, nanos);
		}
	}

	// Replays, capture outcomes and updates need no callback: gpu.graph.* counters read the context's
	// GpuGraphs.stats(), so a replay costs the listener nothing.

	// Timeouts need no callback: gpu.streams.timeout, gpu.batch.rejected and gpu.batch.timeouts read
	// the pool's and the batchers' own counts, so none is missed before binding.

}
