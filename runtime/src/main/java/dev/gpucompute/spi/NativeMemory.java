package dev.gpucompute.spi;

/** A device allocation. */
public interface NativeMemory {

	long byteSize();

}
