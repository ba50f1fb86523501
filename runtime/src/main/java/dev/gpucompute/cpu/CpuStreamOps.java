package dev.gpucompute.cpu;

import org.jspecify.annotations.Nullable;

/**
 * The operations a {@link CpuStream} runs besides kernel launches (those are the backend's own
 * {@link CpuStream.Op}): host tasks on the backend's workers, inline actions, and waits for a point
 * of another stream.
 *
 * <p>Each operation is started once by its stream, after everything before it finished, and ends by
 * returning {@code true} from {@code start} or by one later call of {@link CpuStream#finish}. They
 * hold no state besides what they were given, so they need no locking of their own.
 */
final class CpuStreamOps {

	private CpuStreamOps() {
	}

	/** A host task run by one of the backend's workers, at the stream's priority. */
	static final class Task extends CpuStream.Op {

		private final Runnable body;

		private final boolean replayable;

		Task(Runnable body) {
			this(body, true);
		}

		/** @param replayable whether a capture may record it (not a free: a replay would free again) */
		Task(Runnable body, boolean replayable) {
			this.body = body;
			this.replayable = replayable;
		}

		@Override
		boolean start(CpuStream stream) {
			stream.backend.execute(stream.priority, () -> {
				Throwable failure = null;
				try {
					this.body.run();
				}
				catch (Throwable ex) {
					failure = ex;
				}
				stream.finish(this, failure);
			});
			return false;
		}

		/** A copy or a fill runs again at every replay: its body reads its source when it runs. */
		@Override
		CpuGraph.@Nullable Node node() {
			return this.replayable ? new CpuGraph.TaskNode(this.body) : null;
		}

	}

	/** Runs {@code action} inline, the moment the work before it is done. */
	static final class Inline extends CpuStream.Op {

		private final Runnable action;

		Inline(Runnable action) {
			this.action = action;
		}

		@Override
		boolean start(CpuStream stream) {
			this.action.run();
			return true;
		}

	}

	/** Holds the stream until another stream reaches a point (an event's record). */
	static final class Wait extends CpuStream.Op {

		private final CpuStream source;

		private final long target;

		Wait(CpuStream source, long target) {
			this.source = source;
			this.target = target;
		}

		@Override
		boolean start(CpuStream stream) {
			return this.source.whenReached(this.target, () -> stream.finish(this, null));
		}

	}

}
