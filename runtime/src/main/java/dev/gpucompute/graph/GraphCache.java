package dev.gpucompute.graph;

import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;

import dev.gpucompute.GpuStream;
import org.jspecify.annotations.Nullable;

/**
 * Instantiated graphs by key, for services that run one pipeline per shape (a batch size, a
 * collection's size): the first launch for a key captures the pipeline for it on the launch's stream
 * and keeps the graph; later launches for that key replay it. Bounded: past {@code maxSize} keys, the
 * graph used least recently is closed (an eviction; a replay of it already enqueued still runs).
 *
 * <pre>{@code
 * GraphCache<Integer> bySize = graphs.cache("search");
 * // In a BatchHandler: the batch's stream is the current stream, one graph per batch size
 * bySize.launch(batch.size(), launcher.currentStream(), (size) -> pipeline(size));
 * }</pre>
 *
 * <p>The capture function issues the work for its key on the current stream (the launch's stream,
 * made current for the capture), with the capture's rules ({@link GraphCapture}); the buffers it uses
 * must stay open while the graph is cached. Thread-safe: launches of cached keys run concurrently; a
 * key missing in two threads at once is captured by both and one graph is kept.
 *
 * @param <K> the key: equal keys share a graph
 */
public interface GraphCache<K> extends AutoCloseable {

	/** The name its graphs have. */
	String name();

	/** The most graphs it keeps. */
	int maxSize();

	/**
	 * Replays the graph for {@code key} on {@code stream}, capturing it first on that stream with
	 * {@code capture} when the cache has none (a pooled stream, then: graphs are never captured on a
	 * default stream).
	 * @throws GraphCaptureException when the capture of a missing key fails; nothing is cached then
	 */
	void launch(K key, GpuStream stream, Consumer<? super K> capture);

	/** {@link #launch} returning the replay's future (see {@link GpuGraph#replay(GpuStream)}). */
	CompletableFuture<Void> replay(K key, GpuStream stream, Consumer<? super K> capture);

	/**
	 * Captures {@code key} again on {@code stream} and applies the capture to its cached graph (in
	 * place where the backend allows; see {@link GraphCapture#endAndUpdate}), or caches it as a new
	 * graph when the key had none ({@link GraphUpdate#REINSTANTIATED} then).
	 */
	GraphUpdate update(K key, GpuStream stream, Consumer<? super K> capture);

	/** Whether a graph is cached for {@code key}. */
	boolean contains(K key);

	/** Graphs cached now. */
	int size();

	/** Closes the graph of {@code key}, if any. */
	void invalidate(K key);

	/**
	 * Counts since the cache was made.
	 *
	 * @param hits launches that found their graph
	 * @param misses launches that captured it
	 * @param evictions graphs closed to stay within the maximum size
	 * @param size graphs cached now
	 */
	record Stats(long hits, long misses, long evictions, int size) {
	}

	/** Counts since the cache was made. */
	Stats stats();

	/** Closes every graph it holds; later launches are refused. Idempotent. */
	@Override
	void close();

}
