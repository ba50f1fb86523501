package dev.gpucompute.internal.core;

import dev.gpucompute.ContextClosedException;
import dev.gpucompute.ContextMismatchException;
import dev.gpucompute.DeviceInfo;
import dev.gpucompute.GpuContext;
import org.jspecify.annotations.Nullable;

/**
 * Who a context is and whether it is still open: what every handle of a context (stream, event,
 * buffer, lease, kernel) checks before it is used, and what close changes first. Holds no other
 * component: a handle gets the collaborators it works with through its constructor, and this only
 * for its identity and lifecycle checks.
 *
 * <p>Close goes {@code OPEN -> CLOSING -> CLOSED}: from {@link #closing()} on, {@link #ensureOpen()}
 * refuses and the operations that enqueue work and register its completion ({@link #beginWork()})
 * are refused too, while those already begun are waited for ({@link #awaitWork}).
 *
 * <p>Thread-safe. Created by the context's facade with itself as the {@linkplain #owner() owner},
 * before any room exists.
 */
public final class ContextState {

	private enum Phase {

		OPEN, CLOSING, CLOSED

	}

	private final int id;

	private final DeviceInfo device;

	private final WorkGate work = new WorkGate();

	private volatile Phase phase = Phase.OPEN;

	private final Captures captures = new Captures();

	private final GpuContext owner;

	/** The group of devices this context was opened with (a cross-device wait or copy is allowed within it), or null. */
	private volatile @Nullable Object group;

	/**
	 * @param id the context's number in this JVM
	 * @param device the device it runs on
	 * @param owner the context, as the API sees it: what a handle's {@code context()} answers
	 */
	public ContextState(int id, DeviceInfo device, GpuContext owner) {
		this.id = id;
		this.device = device;
		this.owner = owner;
	}

	/** The context whose state this is, as the API sees it (what a handle's {@code context()} answers). */
	public GpuContext owner() {
		return this.owner;
	}

	/** The graph captures in progress on this context, which every room checks its work against. */
	public Captures captures() {
		return this.captures;
	}

	/** The context's number in this JVM: names its threads and appears in messages. */
	public int id() {
		return this.id;
	}

	public DeviceInfo device() {
		return this.device;
	}

	public boolean isOpen() {
		return this.phase == Phase.OPEN;
	}

	public boolean isClosed() {
		return this.phase == Phase.CLOSED;
	}

	/** "open", "closing" or "closed". */
	public String phase() {
		return this.phase.name().toLowerCase(java.util.Locale.ROOT);
	}

	/** "GPU context #3 (CUDA device 0)". */
	public String describe() {
		return "GPU context #" + this.id + " (" + this.device.backend() + " device " + this.device.ordinal() + ")";
	}

	/** @throws ContextClosedException from the moment close begins */
	public void ensureOpen() {
		if (this.phase != Phase.OPEN) {
			throw closedError();
		}
	}

	private ContextClosedException closedError() {
		return new ContextClosedException(describe() + " is closed");
	}

	/**
	 * Begins an operation that enqueues work and registers its completion (a copy, a stream's
	 * {@code completion()}): close waits for it to end (within the drain timeout) before it waits for
	 * the device, so its future is not abandoned. Pair with {@link #endWork()} in {@code finally}.
	 * @throws ContextClosedException once close has begun
	 */
	public void beginWork() {
		if (!this.work.enter()) {
			throw closedError();
		}
	}

	/** Ends an operation {@link #beginWork()} began. */
	public void endWork() {
		this.work.exit();
	}

	/** Close begins: no new work is accepted. */
	public void closing() {
		this.phase = Phase.CLOSING;
		this.work.refuse();
	}

	/**
	 * Waits until the operations begun before {@link #closing()} have ended.
	 * @return whether they all ended by {@code deadline} ({@link System#nanoTime()})
	 */
	public boolean awaitWork(long deadline) {
		return this.work.awaitEmpty(deadline);
	}

	/** Close is over. */
	public void closed() {
		this.phase = Phase.CLOSED;
	}

	/**
	 * This context was opened as one of a group of devices ({@code GpuDevices}; any token in the
	 * room's own tests): the handles of the group's contexts may be used with it.
	 */
	public void joinGroup(Object devices) {
		this.group = devices;
	}

	/**
	 * Rejects a handle of another context. The message is put together only on failure, since this
	 * runs on every launch.
	 * @param what the handle's kind, for the message ("Stream ", "Device buffer")
	 * @param name its name, or ""
	 */
	public void ensureSame(ContextState other, String what, String name) {
		if (other != this) {
			if (!other.isOpen()) {
				throw new ContextClosedException(what + name + " belongs to GPU context #" + other.id + ", which is closed");
			}
			throw new ContextMismatchException(what + name + " belongs to another GPU context (#" + other.id + ", "
					+ other.device.backend() + " device " + other.device.ordinal() + "); it cannot be used with context #"
					+ this.id + " (" + this.device.backend() + " device " + this.device.ordinal()
					+ "): handles are never shared between contexts");
		}
	}

	/**
	 * Accepts a handle of this context or of another device of the same group (waits on its events,
	 * copies from its buffers); rejects any other, like {@link #ensureSame}.
	 */
	public void ensureSameOrPeer(ContextState other, String what) {
		if (other != this && (this.group == null || other.group != this.group)) {
			ensureSame(other, what, "");
		}
		other.ensureOpen();
	}

	@Override
	public String toString() {
		return describe() + ", " + phase();
	}

}
