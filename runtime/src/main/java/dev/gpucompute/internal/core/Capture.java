package dev.gpucompute.internal.core;

import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;

import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import dev.gpucompute.graph.GraphCaptureException;
import dev.gpucompute.spi.NativeCapture;
import dev.gpucompute.spi.NativeGraph;
import dev.gpucompute.spi.NativeStream;

/**
 * One capture in progress, as the rooms see it: the backend's capture, the thread that owns it, the
 * resources the captured work uses (so that a replay can check and order them), the lease returns
 * held back until it ends, and the refusal that ended it early, if any.
 *
 * <p>Used by its thread; the lease returns may be added from another thread (a lease closed there),
 * so the lists are guarded by this object.
 */
public final class Capture {

	private static final Logger log = LoggerFactory.getLogger(Capture.class);

	private final Captures owner;

	private final String name;

	private final Thread thread;

	private final NativeCapture capture;

	private final String originName;

	private final long startedNanos = System.nanoTime();

	// guarded by this
	private final Map<Object, GraphUse> uses = new IdentityHashMap<>();

	// guarded by this
	private final List<Runnable> atEnd = new ArrayList<>(2);

	// guarded by this
	private boolean over;

	/** The refusal or failure that ended the capture early; read by its thread. */
	private volatile @Nullable RuntimeException failure;

	Capture(Captures owner, String name, Thread thread, NativeCapture capture) {
		this.owner = owner;
		this.name = name;
		this.thread = thread;
		this.capture = capture;
		this.originName = capture.origin().name();
	}

	/** The name the graph will have. */
	public String name() {
		return this.name;
	}

	public Thread thread() {
		return this.thread;
	}

	/** The backend's capture. */
	public NativeCapture nativeCapture() {
		return this.capture;
	}

	/** The name of the stream the capture began on. */
	public String originName() {
		return this.originName;
	}

	public long startedNanos() {
		return this.startedNanos;
	}

	/** Whether the capture still records. */
	public synchronized boolean isActive() {
		return !this.over;
	}

	/** Why the capture ended early, or {@code null}. */
	public @Nullable RuntimeException failure() {
		return this.failure;
	}

	/** Remembers a resource the captured work uses (once per identity). */
	public void uses(GraphUse use) {
		synchronized (this) {
			this.uses.putIfAbsent(use.identity(), use);
		}
	}

	/** The resources the captured work uses, in no particular order. */
	public synchronized List<GraphUse> usesSoFar() {
		return List.copyOf(this.uses.values());
	}

	/**
	 * Runs {@code action} once the capture is over (a lease of a stream that joined it goes back to its
	 * pool then, not while the stream still records); at once when it is over already.
	 */
	public void atEnd(Runnable action) {
		synchronized (this) {
			if (!this.over) {
				this.atEnd.add(action);
				return;
			}
		}
		action.run();
	}

	/**
	 * Ends the capture and returns what it recorded; the capture is over either way.
	 * @throws GraphCaptureException when the backend refuses to end it (a stream not joined back)
	 */
	public NativeGraph end() {
		try {
			return this.capture.end();
		}
		catch (RuntimeException | Error ex) {
			this.failure = (ex instanceof RuntimeException runtime) ? runtime : null;
			throw ex;
		}
		finally {
			finish();
		}
	}

	/**
	 * Ends and discards the capture because of {@code reason} (a refused operation of its thread), so
	 * that its streams can be used at once. Idempotent; the first reason is kept.
	 */
	public void fail(RuntimeException reason) {
		synchronized (this) {
			if (this.over) {
				return;
			}
		}
		if (this.failure == null) {
			this.failure = reason;
		}
		abort();
	}

	/** Ends and discards the capture (closed without end, or failed). Idempotent, never throws. */
	public void abort() {
		synchronized (this) {
			if (this.over) {
				return;
			}
		}
		try {
			this.capture.abort();
		}
		catch (RuntimeException ex) {
			log.warn("Ending the discarded capture of graph '{}' on stream {} failed", this.name, this.originName, ex);
		}
		finally {
			finish();
		}
	}

	/** The capture is over: the registry forgets it, and the held-back actions run. */
	private void finish() {
		List<Runnable> actions;
		synchronized (this) {
			if (this.over) {
				return;
			}
			this.over = true;
			actions = List.copyOf(this.atEnd);
			this.atEnd.clear();
		}
		this.owner.ended(this);
		for (Runnable action : actions) {
			try {
				action.run();
			}
			catch (RuntimeException ex) {
				log.warn("An action held back until the capture of graph '{}' ended failed", this.name, ex);
			}
		}
	}

	/** Whether {@code stream} takes part in this capture now. */
	public boolean includes(NativeStream stream) {
		return stream.capture() == this.capture;
	}

	@Override
	public String toString() {
		return "capture of graph '" + this.name + "' on stream " + this.originName + " by thread '" + this.thread.getName()
				+ "'";
	}

}
