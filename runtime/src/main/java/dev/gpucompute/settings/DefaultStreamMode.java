package dev.gpucompute.settings;

/** Which stream work goes to when no current stream is set. */
public enum DefaultStreamMode {

	/**
	 * Every host thread has its own default stream, so request threads do not serialise each other
	 * ({@code CU_STREAM_PER_THREAD} on CUDA).
	 */
	PER_THREAD,

	/** One default stream for all threads, which synchronises with blocking streams. */
	LEGACY

}
