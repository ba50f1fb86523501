package dev.gpucompute.autoconfigure.aot;

import java.nio.ByteBuffer;
import java.util.List;

import org.jspecify.annotations.Nullable;
import org.springframework.aot.hint.BindingReflectionHintsRegistrar;
import org.springframework.aot.hint.ExecutableMode;
import org.springframework.aot.hint.MemberCategory;
import org.springframework.aot.hint.RuntimeHints;
import org.springframework.aot.hint.RuntimeHintsRegistrar;
import org.springframework.aot.hint.TypeReference;
import org.springframework.util.ClassUtils;

/**
 * The runtime hints of gpu-compute for native images (Spring AOT, GraalVM): what its code reaches
 * by reflection, by resource lookup and from native code, which a native image must keep.
 * Registered in {@code META-INF/spring/aot.factories}, so every application on the starter
 * contributes them when it is processed ahead of time.
 *
 * <ul>
 * <li>Resources: start-up kernels under {@code gpu/kernels/} (the default
 * {@code gpu.kernels.locations}; kernels elsewhere need a hint of the application's own), the
 * service files of the backend providers, JCuda's native libraries and its version file.</li>
 * <li>Reflection: the backend providers (created by {@link java.util.ServiceLoader}), the runtime's
 * entry points (public static methods the API finds by name),
 * {@code sun.misc.Unsafe} (buffers freed without waiting for a GC), and the {@code gpu} endpoint's
 * reports (serialised to JSON).</li>
 * <li>JNI: the JCuda classes that JCuda's native driver binding looks up (their fields and methods),
 * the JDK classes it creates or reads, and the classes whose native methods JNA binds (the CPU
 * backend's {@code calloc}/{@code mmap}); a JDK proxy for the NVRTC binding.</li>
 * </ul>
 * Stateless.
 */
public class GpuRuntimeHints implements RuntimeHintsRegistrar {

	/** Classes JCuda's driver library ({@code libJCudaDriver}) finds from native code ({@code FindClass}). */
	static final List<String> JCUDA_JNI_TYPES = List.of("jcuda.NativePointerObject", "jcuda.Pointer",
			"jcuda.driver.CUaccessPolicyWindow", "jcuda.driver.CUdevice", "jcuda.driver.CUdeviceptr",
			"jcuda.driver.CUdevprop", "jcuda.driver.CUfunction", "jcuda.driver.CUgraphNode", "jcuda.driver.CUhostFn",
			"jcuda.driver.CUipcEventHandle", "jcuda.driver.CUipcMemHandle", "jcuda.driver.CUkernelNodeAttrValue",
			"jcuda.driver.CUmemAccessDesc", "jcuda.driver.CUmemAllocationProp", "jcuda.driver.CUmemLocation",
			"jcuda.driver.CUmemPoolProps", "jcuda.driver.CUstreamAttrValue", "jcuda.driver.CUstreamCallback",
			"jcuda.driver.CUuuid", "jcuda.driver.JITOptions");

	/** JDK classes JCuda's native code creates (exceptions) or reads. */
	static final List<String> JDK_JNI_TYPES = List.of("java.lang.ArrayIndexOutOfBoundsException", "java.lang.Class",
			"java.lang.IllegalArgumentException", "java.lang.NullPointerException", "java.lang.Object",
			"java.lang.OutOfMemoryError", "java.lang.String", "java.lang.UnsupportedOperationException",
			"java.nio.Buffer");

	/** Classes with JNA direct-mapped native methods. */
	static final List<String> JNA_DIRECT_TYPES = List.of("dev.gpucompute.cpu.NativeAllocator$LibC",
			"dev.gpucompute.cpu.NativeAllocator$Mman");

	static final String NVRTC_API = "dev.gpucompute.cuda.NvrtcLibrary$Api";

	static final List<String> BACKEND_PROVIDERS = List.of("dev.gpucompute.cpu.CpuBackendProvider",
			"dev.gpucompute.cuda.CudaBackendProvider");

	/** The class whose public static methods the API's entry points find by name. */
	static final String RUNTIME_IMPLEMENTATION = "dev.gpucompute.internal.context.Engine";

	static final List<String> ENDPOINT_REPORTS = List.of(
			"dev.gpucompute.autoconfigure.actuate.GpuEndpoint$GpuDescriptor",
			"dev.gpucompute.autoconfigure.actuate.GpuEndpoint$DevicesDescriptor",
			"dev.gpucompute.autoconfigure.actuate.GpuEndpoint$LeaseDescriptor");

	@Override
	public void registerHints(RuntimeHints hints, @Nullable ClassLoader classLoader) {
		hints.resources()
			.registerPattern("gpu/kernels/**")
			.registerPattern("META-INF/services/dev.gpucompute.spi.BackendProvider")
			.registerPattern("lib/*JCudaDriver-*")
			.registerPattern("META-INF/maven/org.jcuda/jcuda/pom.properties");
		for (String provider : BACKEND_PROVIDERS) {
			hints.reflection().registerType(TypeReference.of(provider), MemberCategory.INVOKE_PUBLIC_CONSTRUCTORS);
		}
		hints.reflection().registerType(TypeReference.of(RUNTIME_IMPLEMENTATION), MemberCategory.INVOKE_PUBLIC_METHODS);
		hints.reflection()
			.registerType(TypeReference.of("sun.misc.Unsafe"),
					(type) -> type.withField("theUnsafe")
						.withMethod("invokeCleaner", List.of(TypeReference.of(ByteBuffer.class)), ExecutableMode.INVOKE));
		BindingReflectionHintsRegistrar binding = new BindingReflectionHintsRegistrar();
		for (String report : ENDPOINT_REPORTS) {
			if (ClassUtils.isPresent(report, classLoader)) {
				binding.registerReflectionHints(hints.reflection(), ClassUtils.resolveClassName(report, classLoader));
			}
		}
		for (String type : JCUDA_JNI_TYPES) {
			hints.jni()
				.registerType(TypeReference.of(type), MemberCategory.ACCESS_DECLARED_FIELDS,
						MemberCategory.INVOKE_DECLARED_CONSTRUCTORS, MemberCategory.INVOKE_DECLARED_METHODS);
		}
		for (String type : JDK_JNI_TYPES) {
			hints.jni()
				.registerType(TypeReference.of(type), MemberCategory.INVOKE_PUBLIC_CONSTRUCTORS,
						MemberCategory.INVOKE_PUBLIC_METHODS);
		}
		for (String type : JNA_DIRECT_TYPES) {
			hints.jni().registerType(TypeReference.of(type), MemberCategory.INVOKE_DECLARED_METHODS);
		}
		hints.proxies().registerJdkProxy(TypeReference.of(NVRTC_API));
	}

}
