package dev.gpucompute.cuda;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;

import org.junit.jupiter.api.Test;

/** Formatting of device facts; pure Java. */
class CudaFormatTests {

	@Test
	void uuidIsFormattedLikeNvidiaSmi() {
		byte[] bytes = { (byte) 0x9a, (byte) 0xf2, 0x1c, 0x03, (byte) 0xe6, 0x77, 0x0b, (byte) 0xd1, (byte) 0x8f, 0x00,
				0x45, 0x11, (byte) 0xc2, 0x7e, 0x3d, (byte) 0xff };
		assertThat(CudaFormat.uuid(bytes)).isEqualTo("GPU-9af21c03-e677-0bd1-8f00-4511c27e3dff");
		assertThat(CudaFormat.uuid(new byte[16])).isEqualTo("GPU-00000000-0000-0000-0000-000000000000")
			.matches("GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}");
	}

	@Test
	void uuidNeedsSixteenBytes() {
		assertThatThrownBy(() -> CudaFormat.uuid(new byte[15])).isInstanceOf(IllegalArgumentException.class);
	}

	@Test
	void driverVersionIsMajorDotMinor() {
		assertThat(CudaFormat.driverVersion(13000)).isEqualTo("13.0");
		assertThat(CudaFormat.driverVersion(12060)).isEqualTo("12.6");
		assertThat(CudaFormat.driverVersion(12090)).isEqualTo("12.9");
		assertThat(CudaFormat.driverVersion(11080)).isEqualTo("11.8");
	}

	@Test
	void cStringStopsAtNul() {
		byte[] bytes = new byte[32];
		byte[] name = "NVIDIA H100 80GB HBM3".getBytes(StandardCharsets.UTF_8);
		System.arraycopy(name, 0, bytes, 0, name.length);
		assertThat(CudaFormat.cString(bytes)).isEqualTo("NVIDIA H100 80GB HBM3");
	}

	@Test
	void linkFailureKeepsTheLoadersLineOnly() {
		UnsatisfiedLinkError error = new UnsatisfiedLinkError("Error while loading native library \"JCudaDriver-12.6.0-linux-x86_64\"\n"
				+ "Operating system name: Linux\n---(start of nested stack traces)---\n"
				+ "java.lang.UnsatisfiedLinkError: no JCudaDriver-12.6.0-linux-x86_64 in java.library.path: /usr/lib\n"
				+ "\tat java.base/java.lang.ClassLoader.loadLibrary(ClassLoader.java:2434)\n"
				+ "java.lang.UnsatisfiedLinkError: /tmp/libJCudaDriver-12.6.0-linux-x86_64.so: libcuda.so.1: cannot open shared "
				+ "object file: No such file or directory\n\tat java.base/jdk.internal.loader.NativeLibraries.load(Native Method)\n");
		assertThat(CudaFormat.linkFailure(error))
			.isEqualTo("libcuda.so.1: cannot open shared object file: No such file or directory");
		assertThat(CudaFormat.linkFailure(new UnsatisfiedLinkError("something else\nmore")))
			.isEqualTo("UnsatisfiedLinkError: something else");
	}

}
