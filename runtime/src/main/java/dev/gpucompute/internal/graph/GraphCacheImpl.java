package dev.gpucompute.internal.graph;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;

import dev.gpucompute.GpuException;
import dev.gpucompute.GpuStream;
import dev.gpucompute.graph.GpuGraph;
import dev.gpucompute.graph.GraphCache;
import dev.gpucompute.graph.GraphUpdate;
import org.jspecify.annotations.Nullable;

/**
 * The implementation of {@link GraphCache}: graphs by key in least-recently-used order. A launch looks
 * its key up and enqueues the replay under the cache's lock, so that an eviction never closes a graph
 * between the two; a capture (a miss, an update) runs outside it, since it runs the application's code
 * and may take a while.
 */
final class GraphCacheImpl<K> implements GraphCache<K> {

	private final Graphs room;

	private final String name;

	private final int maxSize;

	// guarded by this: access order, eldest first
	private final LinkedHashMap<K, GpuGraph> graphs = new LinkedHashMap<>(16, 0.75f, true);

	private long hits;

	private long misses;

	private long evictions;

	private boolean closed;

	GraphCacheImpl(Graphs room, String name, int maxSize) {
		this.room = room;
		this.name = name;
		this.maxSize = maxSize;
	}

	@Override
	public String name() {
		return this.name;
	}

	@Override
	public int maxSize() {
		return this.maxSize;
	}

	@Override
	public void launch(K key, GpuStream stream, Consumer<? super K> capture) {
		replayed(key, stream, capture, false);
	}

	@Override
	public CompletableFuture<Void> replay(K key, GpuStream stream, Consumer<? super K> capture) {
		// With a future asked for, run() returns the replay's.
		return Objects.requireNonNull(replayed(key, stream, capture, true));
	}

	private @Nullable CompletableFuture<Void> replayed(K key, GpuStream stream, Consumer<? super K> capture,
			boolean future) {
		Objects.requireNonNull(key, "key");
		Objects.requireNonNull(stream, "stream");
		Objects.requireNonNull(capture, "capture");
		synchronized (this) {
			checkOpen();
			GpuGraph cached = this.graphs.get(key);
			if (cached != null) {
				this.hits++;
				return run(cached, stream, future);
			}
			this.misses++;
		}
		GpuGraph captured = this.room.capture(this.name, stream, () -> capture.accept(key));
		synchronized (this) {
			GpuGraph cached = this.closed ? null : this.graphs.get(key);
			if (this.closed || cached != null) {
				// Closed meanwhile, or another thread cached the key first: keep one graph.
				captured.close();
				checkOpen();
				// Still open, so another thread cached the key first.
				return run(Objects.requireNonNull(cached), stream, future);
			}
			this.graphs.put(key, captured);
			evictBeyondMax();
			return run(captured, stream, future);
		}
	}

	private static @Nullable CompletableFuture<Void> run(GpuGraph graph, GpuStream stream, boolean future) {
		if (future) {
			return graph.replay(stream);
		}
		graph.launch(stream);
		return null;
	}

	@Override
	public GraphUpdate update(K key, GpuStream stream, Consumer<? super K> capture) {
		Objects.requireNonNull(key, "key");
		Objects.requireNonNull(capture, "capture");
		GpuGraph cached;
		synchronized (this) {
			checkOpen();
			cached = this.graphs.get(key);
		}
		if (cached != null) {
			return this.room.update(cached, stream, () -> capture.accept(key));
		}
		GpuGraph captured = this.room.capture(this.name, stream, () -> capture.accept(key));
		synchronized (this) {
			if (this.closed) {
				captured.close();
				checkOpen();
			}
			GpuGraph previous = this.graphs.put(key, captured);
			if (previous != null) {
				previous.close();
			}
			evictBeyondMax();
		}
		return GraphUpdate.REINSTANTIATED;
	}

	/** Closes the graphs used least recently while more than the maximum are cached; with the lock held. */
	private void evictBeyondMax() {
		Iterator<Map.Entry<K, GpuGraph>> eldest = this.graphs.entrySet().iterator();
		while (this.graphs.size() > this.maxSize && eldest.hasNext()) {
			GpuGraph evicted = eldest.next().getValue();
			eldest.remove();
			evicted.close();
			this.evictions++;
		}
	}

	private void checkOpen() {
		if (this.closed) {
			throw new GpuException("Graph cache '" + this.name + "' was used after it was closed");
		}
	}

	@Override
	public synchronized boolean contains(K key) {
		return this.graphs.containsKey(key);
	}

	@Override
	public synchronized int size() {
		return this.graphs.size();
	}

	@Override
	public void invalidate(K key) {
		GpuGraph removed;
		synchronized (this) {
			removed = this.graphs.remove(key);
		}
		if (removed != null) {
			removed.close();
		}
	}

	@Override
	public synchronized Stats stats() {
		return new Stats(this.hits, this.misses, this.evictions, this.graphs.size());
	}

	@Override
	public void close() {
		List<GpuGraph> held;
		synchronized (this) {
			if (this.closed) {
				return;
			}
			this.closed = true;
			held = new ArrayList<>(this.graphs.values());
			this.graphs.clear();
		}
		this.room.forget(this);
		for (GpuGraph graph : held) {
			graph.close();
		}
	}

	/** The context closed: its graphs were released with it. */
	synchronized void closedWithContext() {
		this.closed = true;
		this.graphs.clear();
	}

	@Override
	public String toString() {
		return "GraphCache['" + this.name + "', " + size() + " of " + this.maxSize + "]";
	}

}
