package dev.gpucompute.cpu;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

import dev.gpucompute.spi.NativeMemory;

/** Off-heap memory standing in for device memory. */
final class CpuMemory implements NativeMemory {

	private final ByteBuffer buffer;

	CpuMemory(ByteBuffer buffer) {
		this.buffer = buffer;
	}

	@Override
	public long byteSize() {
		return this.buffer.capacity();
	}

	/** An independent view over the whole allocation, in native order. */
	ByteBuffer view() {
		return this.buffer.duplicate().clear().order(ByteOrder.nativeOrder());
	}

	ByteBuffer raw() {
		return this.buffer;
	}

}
