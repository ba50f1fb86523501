package dev.gpucompute;

import java.time.Duration;

/** No pooled stream became free within the acquire timeout. */
public class PoolExhaustedException extends GpuException {

	private static final long serialVersionUID = 1L;

	public PoolExhaustedException(Duration waited, int active, int maxSize, int pending) {
		super("Stream pool exhausted: no stream free after " + waited.toMillis() + " ms (active " + active + ", max "
				+ maxSize + ", waiting " + pending + "). Release leases with try-with-resources, raise "
				+ "gpu.streams.max-size or gpu.streams.acquire-timeout.");
	}

}
