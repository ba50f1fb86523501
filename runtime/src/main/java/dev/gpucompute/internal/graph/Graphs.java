package dev.gpucompute.internal.graph;

import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.atomic.LongAdder;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuException;
import dev.gpucompute.listener.GpuListener;
import dev.gpucompute.GpuStream;
import dev.gpucompute.StreamScope;
import dev.gpucompute.graph.GpuGraph;
import dev.gpucompute.graph.GpuGraphs;
import dev.gpucompute.graph.GraphCache;
import dev.gpucompute.graph.GraphCapture;
import dev.gpucompute.graph.GraphCaptureException;
import dev.gpucompute.graph.GraphCaptureException.Kind;
import dev.gpucompute.graph.GraphInfo;
import dev.gpucompute.graph.GraphStats;
import dev.gpucompute.graph.GraphUpdate;
import dev.gpucompute.internal.core.Capture;
import dev.gpucompute.internal.core.Captures;
import dev.gpucompute.internal.core.ContextCompletions;
import dev.gpucompute.internal.core.ContextState;
import dev.gpucompute.internal.core.LeakRegistry;
import dev.gpucompute.internal.core.Leaks;
import dev.gpucompute.internal.stream.StreamHandle;
import dev.gpucompute.internal.stream.Streams;
import dev.gpucompute.settings.GraphSettings;
import dev.gpucompute.spi.DeviceBackend;
import dev.gpucompute.spi.NativeCapture;
import dev.gpucompute.spi.NativeGraph;
import dev.gpucompute.spi.NativeGraphExec;
import dev.gpucompute.spi.NativeStream;

/**
 * The graph room of one context: the implementation of {@link GpuGraphs}. Begins captures (through
 * the backend, registered with the context's {@link Captures}, which the other rooms check their work
 * against), instantiates and updates what they record, keeps the live graphs and caches for close and
 * the reports, and tells the listener. Built by the context with the collaborators it uses.
 * Thread-safe.
 */
public final class Graphs implements GpuGraphs {

	private static final Logger log = LoggerFactory.getLogger(GpuGraphs.class);

	final ContextState lifecycle;

	final Captures captures;

	private final DeviceBackend backend;

	final Streams streams;

	final ContextCompletions completions;

	private final GpuListener listener;

	private final boolean recordSites;

	// guarded by this
	private final Set<GraphState> live = new LinkedHashSet<>();

	// guarded by this
	private final Set<GraphCacheImpl<?>> caches = new LinkedHashSet<>();

	private final LongAdder captured = new LongAdder();

	private final LongAdder failed = new LongAdder();

	private final LongAdder replays = new LongAdder();

	private final LongAdder updatesInPlace = new LongAdder();

	private final LongAdder reinstantiations = new LongAdder();

	/**
	 * @param lifecycle the context's: identity, open checks, captures in progress
	 * @param backend captures and instantiates
	 * @param streams makes a capture's stream current
	 * @param completions complete the futures of replays
	 * @param listener told of captures, replays and updates
	 * @param recordSites whether graphs record where they were captured (leak detection is on)
	 */
	public Graphs(ContextState lifecycle, DeviceBackend backend, Streams streams, ContextCompletions completions,
			GpuListener listener, boolean recordSites) {
		this.lifecycle = lifecycle;
		this.captures = lifecycle.captures();
		this.backend = backend;
		this.streams = streams;
		this.completions = completions;
		this.listener = listener;
		this.recordSites = recordSites;
	}

	@Override
	public GpuContext context() {
		return this.lifecycle.owner();
	}

	// ---- capture -----------------------------------------------------------------------------------

	@Override
	public GraphCapture beginCapture(String name, GpuStream stream) {
		Objects.requireNonNull(name, "name");
		Objects.requireNonNull(stream, "stream");
		StreamHandle handle = StreamHandle.of(stream);
		NativeStream target = handle.use();
		this.lifecycle.ensureSame(handle.lifecycle(), "Stream ", stream.name());
		Capture mine = this.captures.ofThread();
		if (mine != null) {
			throw this.captures.refuse(mine, Kind.NESTED, "beginCapture", "beginCapture: a capture cannot begin inside "
					+ "another; this thread runs the " + mine + ". End that capture first (captures do not nest)");
		}
		if (handle.kind() != GpuStream.Kind.POOLED) {
			throw new GraphCaptureException(Kind.DEFAULT_STREAM, "beginCapture", "beginCapture: graphs cannot be captured on the "
					+ "default stream " + stream.name() + " (" + handle.kind() + "): lease a pooled stream "
					+ "(context.streams().acquire()) and capture on it. On CUDA a default stream is a blocking stream: "
					+ "capturing it would stall or break other threads' work on the legacy default stream");
		}
		if (target.capture() != null) {
			Capture theirs = this.captures.of(target);
			throw new GraphCaptureException(Kind.NESTED, "beginCapture", "beginCapture: stream " + stream.name() + " takes part in "
					+ ((theirs != null) ? "the " + theirs : "a capture") + " already: a stream is in one capture at a time");
		}
		NativeCapture started = this.backend.beginCapture(target);
		Capture capture = this.captures.begin(name, started);
		StreamScope scope;
		try {
			scope = this.streams.useStream(stream);
		}
		catch (RuntimeException | Error ex) {
			capture.abort();
			throw ex;
		}
		return new CaptureHandle(this, capture, stream, scope);
	}

	/** Instantiates what {@code capture} recorded as a new graph. */
	GpuGraph instantiate(Capture capture, NativeGraph graph, long captureNanos) {
		long started = System.nanoTime();
		NativeGraphExec exec;
		int nodes;
		try {
			nodes = graph.nodeCount();
			exec = graph.instantiate();
		}
		finally {
			graph.destroy();
		}
		long instantiateNanos = System.nanoTime() - started;
		GraphState state = new GraphState(this, capture.name(), GraphState.Installed.of(exec, nodes, capture.usesSoFar()),
				Leaks.site(this.recordSites || LeakRegistry.active(), "Graph '" + capture.name() + "'"), captureNanos,
				instantiateNanos);
		synchronized (this) {
			this.live.add(state);
		}
		LeakRegistry.acquired(state);
		this.captured.increment();
		this.listener.graphCaptured(capture.name(), nodes, captureNanos, instantiateNanos);
		return new GraphHandle(state, state.acquisitionSite() != null);
	}

	/** Applies what {@code capture} recorded to {@code target}: in place when the backend accepts it, else anew. */
	GraphUpdate update(GraphState target, Capture capture, NativeGraph graph, long captureNanos) {
		long started = System.nanoTime();
		GraphUpdate outcome;
		String reason;
		try {
			int nodes = graph.nodeCount();
			synchronized (target) {
				if (target.closed.get()) {
					throw new GpuException("Graph '" + target.name + "' was closed while it was captured again");
				}
				GraphState.Installed was = target.installed;
				NativeGraphExec.Update update = was.exec().update(graph);
				if (update.applied()) {
					target.installed = GraphState.Installed.of(was.exec(), nodes, capture.usesSoFar());
					outcome = GraphUpdate.UPDATED_IN_PLACE;
					reason = null;
				}
				else {
					NativeGraphExec fresh = graph.instantiate();
					target.installed = GraphState.Installed.of(fresh, nodes, capture.usesSoFar());
					destroyQuietly(was.exec(), target.name);
					outcome = GraphUpdate.REINSTANTIATED;
					reason = update.reason();
				}
			}
		}
		finally {
			graph.destroy();
		}
		long nanos = System.nanoTime() - started;
		target.captureNanos = captureNanos;
		target.instantiateNanos = nanos;
		this.captured.increment();
		if (outcome == GraphUpdate.UPDATED_IN_PLACE) {
			target.updatesInPlace.incrementAndGet();
			this.updatesInPlace.increment();
			log.debug("Graph '{}' updated in place in {} us", target.name, nanos / 1000);
		}
		else {
			target.reinstantiations.incrementAndGet();
			this.reinstantiations.increment();
			log.debug("Graph '{}' instantiated anew in {} us: the backend refused the update ({})", target.name,
					nanos / 1000, reason);
		}
		this.listener.graphUpdated(target.name, outcome == GraphUpdate.UPDATED_IN_PLACE, nanos);
		return outcome;
	}

	private static void destroyQuietly(NativeGraphExec exec, String name) {
		try {
			exec.destroy();
		}
		catch (RuntimeException ex) {
			log.warn("Destroying the replaced instantiation of graph '{}' failed", name, ex);
		}
	}

	/** {@code graph}, checked to be one of this context's and open. */
	GraphHandle check(GpuGraph graph) {
		Objects.requireNonNull(graph, "graph");
		GraphHandle handle = GraphHandle.of(graph);
		this.lifecycle.ensureSame(handle.state().room.lifecycle, "Graph ", "'" + handle.name() + "'");
		if (handle.isClosed()) {
			throw new GpuException("Graph '" + handle.name() + "' was used after it was closed");
		}
		return handle;
	}

	void captureFailed(String name, String kind) {
		this.failed.increment();
		this.listener.graphCaptureFailed(name, kind);
	}

	void replayed(GraphState graph) {
		this.replays.increment();
		this.listener.graphReplayed(graph.name);
	}

	synchronized void forget(GraphState graph) {
		this.live.remove(graph);
	}

	// ---- caches ----------------------------------------------------------------------------------

	@Override
	public <K> GraphCache<K> cache(String name, int maxSize) {
		Objects.requireNonNull(name, "name");
		if (maxSize < 1) {
			throw new IllegalArgumentException("A graph cache holds at least 1 graph, got maxSize " + maxSize);
		}
		this.lifecycle.ensureOpen();
		GraphCacheImpl<K> cache = new GraphCacheImpl<>(this, name, maxSize);
		synchronized (this) {
			this.caches.add(cache);
		}
		return cache;
	}

	synchronized void forget(GraphCacheImpl<?> cache) {
		this.caches.remove(cache);
	}

	@Override
	public int defaultCacheSize() {
		return GraphSettings.DEFAULT_CACHE_SIZE;
	}

	@Override
	public GpuGraphs withDefaultCacheSize(int maxSize) {
		return new SizedView(this, maxSize);
	}

	// ---- reports and close -----------------------------------------------------------------------

	@Override
	public List<GraphInfo> graphs() {
		List<GraphState> states;
		synchronized (this) {
			states = new ArrayList<>(this.live);
		}
		List<GraphInfo> infos = new ArrayList<>(states.size());
		for (GraphState state : states) {
			infos.add(state.info());
		}
		return infos;
	}

	@Override
	public GraphStats stats() {
		List<GraphState> states;
		synchronized (this) {
			states = new ArrayList<>(this.live);
		}
		long nodes = 0;
		for (GraphState state : states) {
			nodes += state.nodes();
		}
		return new GraphStats(states.size(), this.captured.sum(), this.failed.sum(), this.replays.sum(),
				this.updatesInPlace.sum(), this.reinstantiations.sum(), nodes);
	}

	@Override
	public synchronized List<GraphCache<?>> caches() {
		return List.copyOf(this.caches);
	}

	/**
	 * At close, after the device drained: the captures still in progress are ended and discarded, then
	 * the caches and the live graphs are released (all before the streams and the device). The drain
	 * did not wait for a capture's work, which is recorded, not run; the work its streams had before the
	 * capture began was waited for.
	 */
	public void releaseAtClose() {
		// Captures left open (their threads never ended them) end first, before the streams they use are
		// destroyed: the backend ends them at the driver and discards what they recorded.
		List<Capture> inProgress = this.captures.active();
		for (Capture capture : inProgress) {
			capture.abort();
		}
		if (!inProgress.isEmpty()) {
			log.warn("{} graph captures were still in progress at context close; ended and discarded", inProgress.size());
		}
		List<GraphState> states;
		List<GraphCacheImpl<?>> open;
		synchronized (this) {
			states = new ArrayList<>(this.live);
			open = new ArrayList<>(this.caches);
			this.live.clear();
			this.caches.clear();
		}
		for (GraphCacheImpl<?> cache : open) {
			cache.closedWithContext();
		}
		for (GraphState state : states) {
			state.releaseAtShutdown();
		}
		if (!states.isEmpty()) {
			log.debug("{} graphs were still open at context close; destroyed", states.size());
		}
	}

	/**
	 * These graphs with another default cache size: everything goes to the room.
	 */
	private static final class SizedView implements GpuGraphs {

		private final Graphs room;

		private final int defaultCacheSize;

		SizedView(Graphs room, int defaultCacheSize) {
			this.room = room;
			this.defaultCacheSize = new GraphSettings(defaultCacheSize).cacheSize();
		}

		@Override
		public GpuContext context() {
			return this.room.context();
		}

		@Override
		public GraphCapture beginCapture(String name, GpuStream stream) {
			return this.room.beginCapture(name, stream);
		}

		@Override
		public <K> GraphCache<K> cache(String name, int maxSize) {
			return this.room.cache(name, maxSize);
		}

		@Override
		public int defaultCacheSize() {
			return this.defaultCacheSize;
		}

		@Override
		public GpuGraphs withDefaultCacheSize(int maxSize) {
			return new SizedView(this.room, maxSize);
		}

		@Override
		public List<GraphCache<?>> caches() {
			return this.room.caches();
		}

		@Override
		public List<GraphInfo> graphs() {
			return this.room.graphs();
		}

		@Override
		public GraphStats stats() {
			return this.room.stats();
		}

	}

}
