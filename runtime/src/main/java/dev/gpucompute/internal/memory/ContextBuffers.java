package dev.gpucompute.internal.memory;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import dev.gpucompute.GpuContext;
import dev.gpucompute.internal.core.LeakRegistry;

/**
 * The open {@link dev.gpucompute.DeviceBuffer}s of a {@link dev.gpucompute.GpuContext}, so that its close can release those the
 * application left open. Thread-safe.
 */
final class ContextBuffers {

	// The context's logger: the warning is the context's close speaking, and is filtered by that name.
	private static final Logger log = LoggerFactory.getLogger(GpuContext.class);

	private final Set<DeviceBufferState> buffers = ConcurrentHashMap.newKeySet();

	void track(DeviceBufferState buffer) {
		this.buffers.add(buffer);
		LeakRegistry.acquired(buffer);
	}

	void untrack(DeviceBufferState buffer) {
		this.buffers.remove(buffer);
	}

	/** Buffers left open are released with the backend, which holds every allocation. */
	void releaseAtClose() {
		List<DeviceBufferState> left = new ArrayList<>(this.buffers);
		if (!left.isEmpty()) {
			log.warn("{} device buffers were still open at context close; they are released with the device",
					left.size());
		}
		for (DeviceBufferState buffer : left) {
			buffer.markReleasedAtShutdown();
		}
		this.buffers.clear();
	}

}
