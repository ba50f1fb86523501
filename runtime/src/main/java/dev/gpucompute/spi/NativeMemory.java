package dev.gpucompute.spi;

import org.jspecify.annotations.Nullable;

/** A device allocation. */
public interface NativeMemory {

	long byteSize();

	/**
	 * This allocation as a handle of the backend's own API, for code that calls that API directly
	 * ({@code DeviceBuffer.nativeHandle}), or {@code null} when the backend has none of that type.
	 * The allocation still belongs to the runtime.
	 */
	default <T> @Nullable T nativeHandle(Class<T> type) {
		return null;
	}

}
