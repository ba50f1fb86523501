package dev.gpucompute;

/** Where a {@link GpuStream} came from. */
public enum StreamKind {

	/** Leased from the {@link StreamPool}; non-blocking. */
	POOLED,

	/** The legacy default stream, shared by every host thread; synchronises with blocking streams. */
	DEFAULT_LEGACY,

	/** The calling thread's own default stream. */
	DEFAULT_PER_THREAD,

	/** Created outside the pool and owned by the caller. */
	EXTERNAL

}
