package dev.gpucompute.internal.graph;

import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;

import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import dev.gpucompute.GpuContext;
import dev.gpucompute.LeakTracker;
import dev.gpucompute.graph.GraphInfo;
import dev.gpucompute.internal.core.GraphUse;
import dev.gpucompute.internal.core.Leaks;
import dev.gpucompute.internal.core.Tracked;
import dev.gpucompute.spi.NativeGraphExec;

/**
 * The state of one {@link dev.gpucompute.graph.GpuGraph} that outlives its handle for the leak cleaner
 * (it is the cleaning action) and for the context, which destroys live graphs at close: the
 * instantiated graph with what it uses, and its counts. Never refers to the handle.
 *
 * <p>Launches, updates and the release take this object's lock, so that an instantiation is never
 * destroyed under a launch.
 */
final class GraphState implements Runnable, Tracked {

	private static final Logger log = LoggerFactory.getLogger(GraphState.class);

	/** An instantiation and what its operations use, replaced as a whole by an update. */
	record Installed(NativeGraphExec exec, int nodes, GraphUse[] uses, boolean tracksReplays) {

		static Installed of(NativeGraphExec exec, int nodes, List<GraphUse> uses) {
			boolean tracks = false;
			for (GraphUse use : uses) {
				tracks |= use.tracksReplays();
			}
			return new Installed(exec, nodes, uses.toArray(new GraphUse[0]), tracks);
		}

	}

	final Graphs room;

	final String name;

	final String thread;

	private final @Nullable Throwable site;

	final AtomicBoolean closed = new AtomicBoolean();

	volatile boolean explicit;

	// guarded by this
	Installed installed;

	final LongAdder replays = new LongAdder();

	final AtomicLong updatesInPlace = new AtomicLong();

	final AtomicLong reinstantiations = new AtomicLong();

	volatile long captureNanos;

	volatile long instantiateNanos;

	GraphState(Graphs room, String name, Installed installed, @Nullable Throwable site, long captureNanos,
			long instantiateNanos) {
		this.room = room;
		this.name = name;
		this.installed = installed;
		this.site = site;
		this.thread = Thread.currentThread().getName();
		this.captureNanos = captureNanos;
		this.instantiateNanos = instantiateNanos;
	}

	synchronized int nodes() {
		return this.installed.nodes();
	}

	GraphInfo info() {
		return new GraphInfo(this.name, nodes(), this.replays.sum(), this.updatesInPlace.get(), this.reinstantiations.get(),
				this.captureNanos, this.instantiateNanos, this.thread);
	}

	/** Closed by its holder, a cache or the cleaner: the instantiation goes. */
	@Override
	public void run() {
		if (!this.closed.compareAndSet(false, true)) {
			return;
		}
		if (!this.explicit) {
			Leaks.report("Graph '" + this.name + "'", this.site);
		}
		this.room.forget(this);
		if (this.room.lifecycle.isOpen()) {
			destroy();
		}
	}

	/** Destroys the instantiation (replays already enqueued still run). */
	synchronized void destroy() {
		try {
			this.installed.exec().destroy();
		}
		catch (RuntimeException ex) {
			log.warn("Destroying graph '{}' failed", this.name, ex);
		}
	}

	/** The context closes: the instantiation goes with the device, after the drain. */
	void releaseAtShutdown() {
		if (this.closed.compareAndSet(false, true)) {
			destroy();
		}
	}

	@Override
	public GpuContext context() {
		return this.room.lifecycle.owner();
	}

	@Override
	public LeakTracker.Kind kind() {
		return LeakTracker.Kind.GRAPH;
	}

	@Override
	public boolean isOpen() {
		return !this.closed.get();
	}

	@Override
	public String describe() {
		return "Graph '" + this.name + "' of " + nodes() + " operations";
	}

	@Override
	public @Nullable Throwable acquisitionSite() {
		return this.site;
	}

}
