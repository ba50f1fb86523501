package dev.gpucompute.spi;

/** A loaded kernel, ready to launch. Unloaded when its backend closes. */
public interface NativeKernel {

	String name();

}
