package dev.gpucompute.internal.memory;

import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.Collections;
import java.util.List;

import org.jspecify.annotations.Nullable;

/**
 * The staging blocks of one chunked copy ({@link ChunkedUpload}, {@link ChunkedDownload}): a few
 * chunk-sized blocks taken at the start ({@link HostMemory#takeStaging(long, int, int)}: it waits
 * for the first two, or one where the budget holds fewer, and takes more while there is room), each
 * reused for a later chunk once the stream has passed the chunk it held. So a copy of any size holds
 * a bounded number of blocks, and never waits for the budget while it holds one: it only waits for
 * its own chunks. While other copies wait for the budget, blocks beyond the first ones go back to
 * it as their chunks complete. Not thread-safe: its copy's monitor guards it; blocks to give back
 * are handed to the caller, which gives them back outside that monitor.
 */
final class StagingWindow {

	private final HostMemory host;

	private final ArrayDeque<ByteBuffer> spare = new ArrayDeque<>();

	/** Blocks kept even while other copies wait: the ones the copy waited for at the start. */
	private final int minimum;

	private int held;

	/**
	 * Takes the blocks for a copy of {@code chunks} chunks of {@code chunkBytes}: call without the
	 * copy's monitor (it may wait for the budget). Throws as {@link HostMemory#takeStaging(long, int, int)}
	 * does, holding nothing.
	 */
	StagingWindow(HostMemory host, long chunkBytes, int chunks) {
		this.host = host;
		int most = Math.min(chunks, host.chunksInFlight());
		int first = Math.min(2, most);
		ByteBuffer[] blocks = host.takeStaging(chunkBytes, first, most);
		this.minimum = host.firstBlocks(chunkBytes, first);
		this.held = blocks.length;
		for (ByteBuffer block : blocks) {
			this.spare.addLast(block);
		}
	}

	/** Blocks the copy holds: spare ones and those of its chunks in flight. */
	int held() {
		return this.held;
	}

	/** A spare block, or null when every block holds a chunk. */
	ByteBuffer poll() {
		return this.spare.pollFirst();
	}

	boolean hasSpare() {
		return !this.spare.isEmpty();
	}

	/** Spare blocks: held, holding no chunk. */
	int spare() {
		return this.spare.size();
	}

	/**
	 * The chunk that held {@code block} is done with it. It is kept for a later chunk when
	 * {@code needed}, unless other copies wait for the budget and this one holds more than its
	 * first blocks.
	 * @return {@code block} when it is to be given back ({@link #giveBack}), null when kept
	 */
	@Nullable ByteBuffer recycle(ByteBuffer block, boolean needed) {
		if (needed && (this.held <= this.minimum || !this.host.stagingContended())) {
			this.spare.addLast(block);
			return null;
		}
		this.held--;
		return block;
	}

	/** Takes every spare block out, to be given back ({@link #giveBack}); the copy needs no more. */
	ByteBuffer[] drainSpare() {
		ByteBuffer[] blocks = this.spare.toArray(new ByteBuffer[0]);
		this.spare.clear();
		this.held -= blocks.length;
		return blocks;
	}

	/**
	 * The blocks of chunks {@code [from, to)} leave {@code staging} (set to null there; chunks without
	 * a block are skipped) and this window, into {@code into}: the copy itself gives them back
	 * ({@link #giveBack}) or loses them ({@link HostMemory#loseStaging}).
	 */
	void takeBack(ByteBuffer[] staging, int from, int to, List<ByteBuffer> into) {
		for (int i = from; i < to; i++) {
			if (staging[i] != null) {
				into.add(staging[i]);
				staging[i] = null;
				this.held--;
			}
		}
	}

	/**
	 * A copy that stops: the blocks of its chunks {@code [from, to)}, which never went on the stream,
	 * leave {@code staging} (set to null there) and join the spare blocks in {@code into}, to be
	 * given back ({@link #giveBack}).
	 */
	void takeBackUnenqueued(ByteBuffer[] staging, int from, int to, List<ByteBuffer> into) {
		takeBack(staging, from, to, into);
		Collections.addAll(into, drainSpare());
	}

	/** Gives blocks back to the pool and the budget; call without the copy's monitor. Null entries are skipped. */
	void giveBack(@Nullable ByteBuffer... blocks) {
		for (ByteBuffer block : blocks) {
			if (block != null) {
				this.host.giveStaging(block);
			}
		}
	}

}
