package dev.gpucompute.autoconfigure;

import java.util.List;

import dev.gpucompute.listener.GpuListener;
import dev.gpucompute.listener.KernelLoad;

/**
 * Passes every callback to several listeners, in order. Listeners must not throw (the
 * {@link GpuListener} contract), so no callback is guarded here: the launch path stays a loop.
 */
final class CompositeGpuListener implements GpuListener {

	private final GpuListener[] listeners;

	private CompositeGpuListener(List<GpuListener> listeners) {
		this.listeners = listeners.toArray(new GpuListener[0]);
	}

	/** {@link GpuListener#NONE} for none, the listener itself for one, a composite otherwise. */
	static GpuListener of(List<GpuListener> listeners) {
		if (listeners.isEmpty()) {
			return GpuListener.NONE;
		}
		return (listeners.size() == 1) ? listeners.get(0) : new CompositeGpuListener(listeners);
	}

	@Override
	public void kernelLaunched(String kernel, boolean success) {
		for (GpuListener listener : this.listeners) {
			listener.kernelLaunched(kernel, success);
		}
	}

	@Override
	public void kernelFailed(String kernel) {
		for (GpuListener listener : this.listeners) {
			listener.kernelFailed(kernel);
		}
	}

	@Override
	public void kernelTimed(String kernel, long nanos) {
		for (GpuListener listener : this.listeners) {
			listener.kernelTimed(kernel, nanos);
		}
	}

	@Override
	public void kernelLoaded(KernelLoad load) {
		for (GpuListener listener : this.listeners) {
			listener.kernelLoaded(load);
		}
	}

	@Override
	public void leaseAcquired(long waitNanos) {
		for (GpuListener listener : this.listeners) {
			listener.leaseAcquired(waitNanos);
		}
	}

	@Override
	public void leaseReleased(long heldNanos) {
		for (GpuListener listener : this.listeners) {
			listener.leaseReleased(heldNanos);
		}
	}

	@Override
	public void leaseTimedOut(long waitNanos) {
		for (GpuListener listener : this.listeners) {
			listener.leaseTimedOut(waitNanos);
		}
	}

	@Override
	public void batcherOpened(String batcher) {
		for (GpuListener listener : this.listeners) {
			listener.batcherOpened(batcher);
		}
	}

	@Override
	public void batchDispatched(String batcher, int size) {
		for (GpuListener listener : this.listeners) {
			listener.batchDispatched(batcher, size);
		}
	}

	@Override
	public void batchItemWaited(String batcher, long waitNanos) {
		for (GpuListener listener : this.listeners) {
			listener.batchItemWaited(batcher, waitNanos);
		}
	}

	@Override
	public void graphCaptured(String graph, int nodes, long captureNanos, long instantiateNanos) {
		for (GpuListener listener : this.listeners) {
			listener.graphCaptured(graph, nodes, captureNanos, instantiateNanos);
		}
	}

	@Override
	public void graphUpdated(String graph, boolean inPlace, long nanos) {
		for (GpuListener listener : this.listeners) {
			listener.graphUpdated(graph, inPlace, nanos);
		}
	}

	@Override
	public void graphCaptureFailed(String graph, String reason) {
		for (GpuListener listener : this.listeners) {
			listener.graphCaptureFailed(graph, reason);
		}
	}

	@Override
	public void graphReplayed(String graph) {
		for (GpuListener listener : this.listeners) {
			listener.graphReplayed(graph);
		}
	}

}
