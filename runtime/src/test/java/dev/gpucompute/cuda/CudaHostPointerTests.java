package dev.gpucompute.cuda;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.reflect.Field;
import java.nio.Buffer;
import java.nio.ByteBuffer;

import org.junit.jupiter.api.Test;

import com.sun.jna.Native;

import jcuda.Pointer;

/**
 * The host pointer the CUDA backend gives {@code cuMemcpyHtoDAsync} and {@code cuMemcpyDtoHAsync}
 * ({@link CudaMemoryManager#hostPointer}) points at the buffer's byte at its position, for a buffer
 * that starts inside its allocation (a host buffer's region from an offset is a slice) and has a
 * position of its own. Without a GPU: the address the driver would get is worked out the way JCuda
 * 12.6's native side does it (jcuda-common, {@code PointerUtils.hpp}, {@code DirectBufferPointerData}:
 * {@code GetDirectBufferAddress} of the pointer's buffer, which is the buffer's first byte whatever
 * its position, plus the pointer's {@code byteOffset}); JNA's {@code getDirectBufferPointer} calls the
 * same JNI function. {@code CudaBackendMemoryGpuTests} copies through such buffers on a device.
 */
class CudaHostPointerTests {

	/** The address JCuda's JNI passes to the driver for a pointer to a buffer. */
	private static long resolved(Pointer pointer) throws ReflectiveOperationException {
		Field buffer = Pointer.class.getDeclaredField("buffer");
		buffer.setAccessible(true);
		Field byteOffset = Pointer.class.getDeclaredField("byteOffset");
		byteOffset.setAccessible(true);
		return address((Buffer) buffer.get(pointer)) + byteOffset.getLong(pointer);
	}

	private static long address(Buffer buffer) {
		return com.sun.jna.Pointer.nativeValue(Native.getDirectBufferPointer(buffer));
	}

	@Test
	void aSliceAtAnOffsetWithAPositionOfItsOwnIsPointedAtItsPosition() throws ReflectiveOperationException {
		ByteBuffer allocation = ByteBuffer.allocateDirect(4096);
		long start = address(allocation);
		// A host buffer's memory from byte 100 on, as a copy of it from that offset sees it.
		ByteBuffer region = allocation.duplicate().position(100).slice();
		assertThat(resolved(CudaMemoryManager.hostPointer(region))).as("position 0 of a slice at 100").isEqualTo(start + 100);
		region.position(28);
		assertThat(resolved(CudaMemoryManager.hostPointer(region))).as("position 28 of a slice at 100")
			.isEqualTo(start + 128);
		assertThat(region.position()).as("the caller's buffer is left as it was").isEqualTo(28);
		allocation.position(7);
		assertThat(resolved(CudaMemoryManager.hostPointer(allocation))).as("position 7 of the allocation").isEqualTo(start + 7);
	}

}
