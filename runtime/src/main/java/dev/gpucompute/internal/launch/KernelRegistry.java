package dev.gpucompute.internal.launch;

import java.util.Collection;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import dev.gpucompute.GpuException;
import dev.gpucompute.listener.GpuListener;
import dev.gpucompute.spi.BackendListener;
import org.jspecify.annotations.Nullable;

/**
 * The kernels loaded into one context, by name, and the failures the backend finds while they run:
 * the backend is opened with this as its {@link BackendListener}, before the launcher exists, and the
 * launcher is built with it, so the two meet here without either being wired to the other after it
 * was made. A failure reported for a kernel is counted on it (its {@code errors}) and told to the
 * context's listener. Thread-safe.
 */
public final class KernelRegistry implements BackendListener {

	private final ConcurrentHashMap<String, KernelHandle> kernels = new ConcurrentHashMap<>();

	private final GpuListener listener;

	/** @param listener told of each kernel failure the backend reports */
	public KernelRegistry(GpuListener listener) {
		this.listener = listener;
	}

	@Override
	public void kernelFailed(String kernel, GpuException failure) {
		KernelHandle handle = this.kernels.get(kernel);
		if (handle != null) {
			handle.errors.increment();
		}
		this.listener.kernelFailed(kernel);
	}

	@Nullable KernelHandle get(String name) {
		return this.kernels.get(name);
	}

	void put(String name, KernelHandle kernel) {
		this.kernels.put(name, kernel);
	}

	Set<String> names() {
		return this.kernels.keySet();
	}

	Collection<KernelHandle> all() {
		return this.kernels.values();
	}

}
