package dev.gpucompute.cuda;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

import org.junit.jupiter.api.Test;

import dev.gpucompute.spi.NativeMemory;

/**
 * Launch arguments fill every byte of their 8-byte slots, whatever an earlier launch left there:
 * a kernel whose parameter is 64 bits wide must not see stale high bytes.
 */
class LaunchPackingTests {

	private static final NativeMemory BUFFER = () -> 64;

	@Test
	void fourByteValuesSetTheirHighBytesDeterministically() {
		ByteBuffer slots = dirtySlots(5);
		LaunchPacking.pack(CudaTestSupport.args(7, -7, 1.5f, -0.0f, BUFFER), slots, (memory, index, kernel) -> 0xABCDL, "k");
		assertThat(slots.getLong(0)).as("INT 7 as a 64-bit slot").isEqualTo(7L);
		assertThat(slots.getLong(8)).as("INT -7, sign-extended").isEqualTo(-7L);
		assertThat(slots.getInt(16)).isEqualTo(Float.floatToRawIntBits(1.5f));
		assertThat(slots.getInt(20)).as("FLOAT high bytes").isZero();
		assertThat(slots.getInt(24)).isEqualTo(Float.floatToRawIntBits(-0.0f));
		assertThat(slots.getInt(28)).isZero();
		assertThat(slots.getLong(32)).isEqualTo(0xABCDL);
	}

	@Test
	void eightByteValuesFillTheirSlots() {
		ByteBuffer slots = dirtySlots(2);
		LaunchPacking.pack(CudaTestSupport.args(Long.MIN_VALUE + 3, -2.25), slots, (memory, index, kernel) -> 0, "k");
		assertThat(slots.getLong(0)).isEqualTo(Long.MIN_VALUE + 3);
		assertThat(slots.getDouble(8)).isEqualTo(-2.25);
	}

	@Test
	void bufferAddressesComeFromTheBackendWithTheArgumentIndexAndKernel() {
		ByteBuffer slots = dirtySlots(2);
		assertThatThrownBy(() -> LaunchPacking.pack(CudaTestSupport.args(1, BUFFER), slots, (memory, index, kernel) -> {
			throw new IllegalStateException(kernel + " argument " + index);
		}, "saxpy")).hasMessage("saxpy argument 1");
	}

	/**
	 * An argument block as {@code cuLaunchKernel} reads it: the slots, then after
	 * the block's capacity the table of slot addresses that is its {@code kernelParams}.
	 */
	@Test
	void theArgumentTableHoldsTheAddressOfEachSlot() {
		int capacity = CudaHostScratch.ARGUMENT_BLOCK / 16;
		ByteBuffer block = dirtySlots(2 * capacity);
		long address = 0x7F00_1234_5000L;
		LaunchPacking.pack(CudaTestSupport.args(3, 2.5f, BUFFER), block, (memory, index, kernel) -> 0xD000L, "k");
		CudaHostScratch.writeTable(block, address, capacity, 3);
		for (int i = 0; i < 3; i++) {
			assertThat(block.getLong(8 * capacity + 8 * i)).as("table entry %d", i).isEqualTo(address + 8L * i);
		}
		assertThat(block.getLong(0)).isEqualTo(3L);
		assertThat(block.getLong(16)).isEqualTo(0xD000L);
		assertThat(block.getLong(8 * capacity + 24)).as("entries past the count are not written").isEqualTo(0xEEEEEEEEEEEEEEEEL);
	}

	/** Slots as a previous launch would leave them: every byte set. */
	private static ByteBuffer dirtySlots(int count) {
		ByteBuffer slots = ByteBuffer.allocateDirect(8 * count).order(ByteOrder.nativeOrder());
		for (int i = 0; i < slots.capacity(); i++) {
			slots.put(i, (byte) 0xEE);
		}
		return slots;
	}

}
