package dev.gpucompute.settings;

import java.time.Duration;

/**
 * Copies between host and device and the host memory they go through ({@code gpu.copies.*} in the
 * Spring Boot starter): their defaults, limits and checks, held here once. Immutable; every component
 * is checked on its own when the record is made, and the rule between two of them (a budget that
 * holds a chunk) by {@link #checked()}, which opening a context applies.
 *
 * <p>Array and buffer copies larger than one chunk go through staging memory (page-locked on CUDA)
 * in chunks, so that packing on the host overlaps the transfer. Memory of host buffers
 * ({@code GpuLauncher.allocateHost}) does not count against the staging budget: it is the
 * application's, held as long as it chooses.
 *
 * @param stagingBudget most staging memory copies hold at once, in bytes; at least
 * {@link #MIN_CHUNK} and one chunk. A copy of at most one chunk holds one block of its size; a larger
 * copy holds a few chunks at a time (two or more when the budget has room, up to 8 or two per copy
 * thread and caller) and reuses each once the stream has passed it, so a copy of any size runs within
 * any budget. A copy that finds no room waits, first come first served, up to {@code stagingTimeout}
 * @param stagingTimeout longest wait of a copy for staging: for room in the budget, and, for a copy
 * larger than the blocks it holds, for each of its own blocks to come back from its stream (behind a
 * long kernel, as long as the kernel runs); then {@code StagingExhaustedException}. Zero fails at once
 * when there is no room or no block
 * @param stagingCache most host memory for copies kept for reuse between them (staging chunks and the
 * memory of closed host buffers), in bytes; zero allocates and frees it for every copy and host buffer
 * @param chunkSize bytes per chunk of array and buffer copies larger than one chunk: a multiple of
 * {@link #MIN_CHUNK} up to {@link #MAX_CHUNK}; copies of at most one chunk go in one step
 * @param threads threads that pack and unpack the chunks of large copies besides the calling thread,
 * 0 to {@link #MAX_THREADS}; they start when a copy needs them and end when idle for a few seconds
 */
public record CopySettings(long stagingBudget, Duration stagingTimeout, long stagingCache, long chunkSize,
		int threads) {

	/** Smallest chunk of a pipelined copy, and the unit chunk sizes are counted in. */
	public static final long MIN_CHUNK = 4096;

	/** Largest chunk of a pipelined copy. */
	public static final long MAX_CHUNK = 1L << 30;

	/** Most threads that pack and unpack large copies besides the calling thread. */
	public static final int MAX_THREADS = 64;

	/**
	 * Staging copies may hold at once unless set: 1 GiB. A copy runs at full speed with a few chunks in
	 * flight (16 MiB at the default chunk size), so this lets about 64 large copies run at full speed at
	 * once, twice the default stream pool's 32 streams, while keeping page-locked memory, which the
	 * operating system cannot page out, far below a GPU server's memory. It is a ceiling, not a
	 * reservation.
	 */
	public static final long DEFAULT_STAGING_BUDGET = 1L << 30;

	/** Longest wait of a copy for staging unless set: 30 s, like a stream lease's. */
	public static final Duration DEFAULT_STAGING_TIMEOUT = Duration.ofSeconds(30);

	/** Host memory kept for reuse between copies unless set: 256 MiB. */
	public static final long DEFAULT_STAGING_CACHE = 256L << 20;

	/** Bytes per chunk unless set: 2 MiB. */
	public static final long DEFAULT_CHUNK_SIZE = 2L << 20;

	/**
	 * The runtime's defaults: a 1 GiB staging budget, 30 s staging timeout, 256 MiB cache, 2 MiB chunks
	 * and {@link #defaultThreads()} copy threads.
	 */
	public static final CopySettings DEFAULTS = new CopySettings(DEFAULT_STAGING_BUDGET, DEFAULT_STAGING_TIMEOUT,
			DEFAULT_STAGING_CACHE, DEFAULT_CHUNK_SIZE, defaultThreads());

	/**
	 * Checks each value on its own.
	 * @throws InvalidSettingException when one is out of its limits
	 * @throws NullPointerException when the timeout is missing
	 */
	public CopySettings {
		Limits.atLeast(stagingBudget, MIN_CHUNK, "bytes", "stagingBudget");
		Limits.nanos(stagingTimeout, "stagingTimeout");
		Limits.notNegative(stagingCache, "stagingCache");
		if (chunkSize < MIN_CHUNK || chunkSize > MAX_CHUNK || chunkSize % MIN_CHUNK != 0) {
			// Chunks are packed and unpacked in whole elements of up to 8 bytes, block by block.
			throw new InvalidSettingException("copyChunkSize",
					(chunkSize < MIN_CHUNK) ? InvalidSettingException.Problem.TOO_SMALL
							: (chunkSize > MAX_CHUNK) ? InvalidSettingException.Problem.TOO_LARGE
									: InvalidSettingException.Problem.NOT_A_MULTIPLE,
					(chunkSize > MAX_CHUNK) ? MAX_CHUNK : MIN_CHUNK, "copyChunkSize must be a multiple of " + MIN_CHUNK
							+ " between " + MIN_CHUNK + " and " + MAX_CHUNK + ", got " + chunkSize);
		}
		Limits.within(threads, 0, MAX_THREADS, "copyThreads");
	}

	/**
	 * These settings, once the budget is checked to hold one chunk.
	 * @throws InvalidSettingException when it does not
	 */
	public CopySettings checked() {
		if (this.stagingBudget < this.chunkSize) {
			throw new InvalidSettingException("stagingBudget", InvalidSettingException.Problem.TOO_SMALL, this.chunkSize,
					"stagingBudget (" + this.stagingBudget + " bytes) must hold at least one copy chunk (copyChunkSize "
							+ this.chunkSize + " bytes)");
		}
		return this;
	}

	/** The copy threads unless set: a quarter of the cores, 1 to 4. */
	public static int defaultThreads() {
		return Math.max(1, Math.min(4, Runtime.getRuntime().availableProcessors() / 4));
	}

	/** With a staging budget of {@code bytes}. */
	public CopySettings withStagingBudget(long bytes) {
		return new CopySettings(bytes, this.stagingTimeout, this.stagingCache, this.chunkSize, this.threads);
	}

	/** With {@code stagingTimeout}. */
	public CopySettings withStagingTimeout(Duration stagingTimeout) {
		return new CopySettings(this.stagingBudget, stagingTimeout, this.stagingCache, this.chunkSize, this.threads);
	}

	/** With a staging cache of {@code bytes}. */
	public CopySettings withStagingCache(long bytes) {
		return new CopySettings(this.stagingBudget, this.stagingTimeout, bytes, this.chunkSize, this.threads);
	}

	/** With chunks of {@code bytes}. */
	public CopySettings withChunkSize(long bytes) {
		return new CopySettings(this.stagingBudget, this.stagingTimeout, this.stagingCache, bytes, this.threads);
	}

	/** With {@code threads} copy threads. */
	public CopySettings withThreads(int threads) {
		return new CopySettings(this.stagingBudget, this.stagingTimeout, this.stagingCache, this.chunkSize, threads);
	}

}
