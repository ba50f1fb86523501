package dev.gpucompute.internal.stream;

import dev.gpucompute.internal.core.Capture;
import dev.gpucompute.internal.core.Captures;
import dev.gpucompute.spi.NativeStream;

/**
 * The capture rules for waits between streams, which decide whether a stream joins a capture (a
 * fork), orders two streams of one capture (a join), or would make captured work wait for work
 * outside the capture (refused, as CUDA refuses a wait inside a capture for an event recorded outside
 * it). A default stream never joins: {@code beginCapture} refuses it for the same reason. Called only
 * while a capture is in progress on the context, or for an event recorded in one.
 */
final class CaptureChecks {

	private CaptureChecks() {
	}

	/** {@code target.waitFor(event)}; {@code pooled}: whether {@code target} is a pooled stream. */
	static void eventWait(Captures captures, NativeStream target, boolean pooled, EventHandle event, String operation) {
		Capture recordedIn = event.recordedIn();
		Capture mine = captures.ofThread();
		if (recordedIn != null) {
			if (!recordedIn.isActive()) {
				throw captures.capturedEvent(operation, recordedIn);
			}
			if (recordedIn != mine) {
				if (mine != null) {
					throw captures.outsideDependency(mine, operation, "an event recorded in another capture ("
							+ recordedIn + ")");
				}
				throw captures.capturedEvent(operation, recordedIn);
			}
			Capture joined = captures.of(target);
			if (joined == null && !pooled) {
				throw captures.defaultStreamJoin(recordedIn, operation, target);
			}
			if (joined == null || joined == mine) {
				return; // a stream joining the capture, or an order between two of its streams
			}
			captures.forWork(target, operation); // another thread's capture: refused
			return;
		}
		Capture capture = captures.forWork(target, operation);
		if (capture != null && event.isRecorded()) {
			throw captures.outsideDependency(capture, operation, "an event recorded outside the capture");
		}
	}

	/**
	 * {@code target.waitFor(source)}: a marker recorded on {@code source}, waited for by {@code target};
	 * {@code pooled}: whether {@code target} is a pooled stream.
	 */
	static void streamWait(Captures captures, NativeStream target, boolean pooled, NativeStream source, String operation) {
		Capture mine = captures.ofThread();
		Capture from = captures.of(source);
		Capture to = captures.of(target);
		if (mine == null && from == null && to == null) {
			return;
		}
		if (mine != null && from == mine && to == null && !pooled) {
			throw captures.defaultStreamJoin(mine, operation, target);
		}
		if (mine != null && from == mine && (to == null || to == mine)) {
			return; // a fork into the capture, or a join between two of its streams
		}
		if (mine != null && to == mine) {
			throw captures.outsideDependency(mine, operation, "the work of stream " + source.name()
					+ ", which is not part of the capture");
		}
		captures.forWork(target, operation);
		captures.forWork(source, operation);
	}

	/**
	 * {@code target.waitFor(source)} where {@code source} is a stream of a peer context, whose captures
	 * are {@code theirs}: refused while {@code source} takes part in one of them, since the wait would
	 * make {@code target}, a stream of another device, join that capture.
	 */
	static void peerStreamWait(Captures theirs, NativeStream source, String operation) {
		Capture capture = theirs.any() ? theirs.of(source) : null;
		if (capture != null) {
			throw theirs.crossDeviceJoin(capture, operation);
		}
	}

}
