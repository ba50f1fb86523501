package dev.gpucompute.cuda;

import static jcuda.driver.JCudaDriver.cuFuncGetAttribute;
import static jcuda.driver.JCudaDriver.cuFuncSetAttribute;
import static jcuda.driver.JCudaDriver.cuLaunchKernel;
import static jcuda.driver.JCudaDriver.cuModuleGetFunction;
import static jcuda.driver.JCudaDriver.cuModuleLoadDataJIT;
import static jcuda.driver.JCudaDriver.cuModuleUnload;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Queue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicLong;

import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import dev.gpucompute.ContextClosedException;
import dev.gpucompute.Dim3;
import dev.gpucompute.GpuException;
import dev.gpucompute.InvalidLaunchConfigException;
import dev.gpucompute.KernelCompilationException;
import dev.gpucompute.KernelSource;
import dev.gpucompute.LaunchConfig;
import dev.gpucompute.spi.LaunchArgs;
import dev.gpucompute.spi.NativeMemory;
import jcuda.driver.CUfunction;
import jcuda.driver.CUfunction_attribute;
import jcuda.driver.CUjit_option;
import jcuda.driver.CUmodule;
import jcuda.driver.JITOptions;

/**
 * The modules-and-launch room of a {@link CudaDeviceBackend}: turns a {@link KernelSource} into a
 * loaded function (compiling CUDA C through {@link CudaCompiler}, with a memory and a disk cache),
 * and launches kernels with their arguments packed into host memory lent per launch
 * ({@link CudaHostScratch}). Thread-safe.
 */
final class CudaModules {

	private static final Logger logger = LoggerFactory.getLogger(CudaModules.class);

	private final CudaDeviceBackend backend;

	private final CudaDeviceFacts facts;

	private final CudaCompiler compiler;

	private final @Nullable KernelCache cache;

	private final List<String> compileOptions;

	private final Queue<CUmodule> modules = new ConcurrentLinkedQueue<>();

	/** Host memory for launch arguments and module images, freed at close. */
	private final CudaHostScratch scratch;

	/** Compiled images by cache key, so a kernel loaded twice is compiled once per backend. */
	private final Map<String, byte[]> compiled = new ConcurrentHashMap<>();

	private final AtomicLong compileCount = new AtomicLong();

	private final AtomicLong cacheHits = new AtomicLong();

	private final AtomicLong prebuiltLoads = new AtomicLong();

	/** Resolves buffer arguments; a field, so that packing a launch creates no lambda. */
	private final LaunchPacking.Addresses addresses = this::argumentAddress;

	CudaModules(CudaDeviceBackend backend, CudaDeviceFacts facts, CudaCompiler compiler, List<String> compileOptions,
			@Nullable Path kernelCacheDir) {
		this.backend = backend;
		this.facts = facts;
		this.compiler = compiler;
		this.compileOptions = List.copyOf(compileOptions);
		this.cache = (kernelCacheDir != null) ? new KernelCache(kernelCacheDir) : null;
		this.scratch = new CudaHostScratch(backend);
	}

	// ---------------------------------------------------------------- loading

	CudaKernel load(KernelSource source) {
		// The driver's module loads, which wait for the device, timed apart from compiling (CudaKernel.loadNanos).
		long[] driverNanos = new long[1];
		String name = source.name();
		KernelSource.CudaForm form = source.cudaForm();
		if (form == null) {
			throw new KernelCompilationException(name, "it has no CUDA code, only a CPU implementation; give it "
					+ ".cuda(source), .ptx(text), .cubin(image), .fatbin(image) or .cudaResource(path)", null, null);
		}
		// KernelSource gives a CUDA form only together with its code.
		byte[] code = Objects.requireNonNull(source.cudaCode(), "CUDA code of a kernel with a CUDA form");
		if (form == KernelSource.CudaForm.SOURCE && source.prebuiltForm() != null) {
			String origin = "prebuilt " + source.prebuiltForm().name().toLowerCase(java.util.Locale.ROOT);
			try {
				// KernelSource gives a prebuilt form only together with its code.
				byte[] prebuilt = Objects.requireNonNull(source.prebuiltCode(), "code of a prebuilt form");
				CUmodule module = loadModule(name, prebuilt, origin, driverNanos);
				CudaKernel kernel = bind(name, module, origin, driverNanos[0]);
				this.prebuiltLoads.incrementAndGet();
				return kernel;
			}
			catch (KernelCompilationException ex) {
				// Built for other architectures, or PTX newer than this driver: the source still compiles.
				logger.warn("The {} code of kernel '{}' does not load on this device ({}); compiling its CUDA C source instead",
						origin, name, ex.getMessage());
			}
		}
		if (form == KernelSource.CudaForm.SOURCE) {
			CompileOptions.Merged merged = CompileOptions.merge(this.compileOptions, source.compileOptions());
			if (!merged.dropped().isEmpty()) {
				logger.info("Kernel '{}' sets its own {}: the context's compile options {} are left out for it", name,
						source.compileOptions(), merged.dropped());
			}
			List<String> options = merged.options();
			String key = KernelCache.key(code, options, "compute_" + this.facts.arch(), this.facts.driverVersion);
			Compiled image = compiledImage(name, code, options, key);
			try {
				CUmodule module = loadModule(name, image.bytes(), image.origin(), driverNanos);
				return bind(name, module, image.origin(), driverNanos[0]);
			}
			catch (KernelCompilationException ex) {
				if (!image.fromDiskCache()) {
					throw ex;
				}
				// A cached entry the driver rejects (corrupt, or from an incompatible compiler): drop it, compile again.
				logger.warn("Cached code for kernel '{}' was rejected ({}); compiling it again", name, ex.getMessage());
				// Only the disk cache gives an image fromDiskCache, so there is one.
				Objects.requireNonNull(this.cache, "kernel cache").evict(name, key);
				this.compiled.remove(key);
				Compiled fresh = compile(name, code, options, key);
				CUmodule module = loadModule(name, fresh.bytes(), fresh.origin(), driverNanos);
				return bind(name, module, fresh.origin(), driverNanos[0]);
			}
		}
		String origin = form.name().toLowerCase(java.util.Locale.ROOT);
		CUmodule module = loadModule(name, code, origin, driverNanos);
		return bind(name, module, origin, driverNanos[0]);
	}

	private record Compiled(byte[] bytes, String origin, boolean fromDiskCache) {
	}

	private Compiled compiledImage(String name, byte[] code, List<String> options, String key) {
		byte[] known = this.compiled.get(key);
		if (known != null) {
			this.cacheHits.incrementAndGet();
			return new Compiled(known, "memory cache", false);
		}
		if (this.cache != null) {
			byte[] cached = this.cache.read(name, key);
			if (cached != null) {
				this.cacheHits.incrementAndGet();
				this.compiled.put(key, cached);
				logger.debug("Kernel '{}' loaded from the kernel cache {}", name, this.cache.pathFor(name, key));
				return new Compiled(cached, "kernel cache", true);
			}
		}
		return compile(name, code, options, key);
	}

	private Compiled compile(String name, byte[] code, List<String> options, String key) {
		CudaCompiler.Result result = this.compiler.compile(name, new String(code, StandardCharsets.UTF_8), options,
				this.facts.major, this.facts.minor, this.facts.driverVersion);
		this.compileCount.incrementAndGet();
		if (result.log() != null && !result.log().isBlank()) {
			logger.info("Kernel '{}' compiled by {} with messages:\n{}", name, result.compiler(), result.log().strip());
		}
		this.compiled.put(key, result.image());
		if (this.cache != null) {
			this.cache.write(name, key, result.image());
		}
		return new Compiled(result.image(), result.compiler(), false);
	}

	/**
	 * Loads PTX (JIT-compiled by the driver, its error log captured), a cubin or a fatbin with
	 * {@code cuModuleLoadDataEx}, adding the time of that call to {@code driverNanos[0]}: the driver
	 * does not return before the work in flight on the device is done (measured on an H200: a load
	 * behind a 1 s kernel on another stream returned when that kernel ended).
	 */
	private CUmodule loadModule(String kernelName, byte[] image, String origin, long[] driverNanos) {
		byte[] errorLog = new byte[16 * 1024];
		JITOptions jit = new JITOptions();
		jit.putBytes(CUjit_option.CU_JIT_ERROR_LOG_BUFFER, errorLog);
		jit.putInt(CUjit_option.CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, errorLog.length);
		CUmodule module = new CUmodule();
		// A native copy with a terminating NUL (PTX must be NUL-terminated): the driver reads it while it
		// JIT-compiles or waits for the device, so no Java array is pinned for that long, and the copy
		// is host memory of this backend, freed at its close rather than by a garbage collection.
		HostBlocks.Block<CudaHostScratch.Chunk> data = this.scratch.image(image);
		int result;
		long started = System.nanoTime();
		try {
			// Again, after the block: compiling, reading the cache and waiting for the block's lock may
			// each move a virtual thread to another carrier.
			this.backend.enter();
			result = cuModuleLoadDataJIT(module, CudaHostScratch.start(data), jit);
		}
		finally {
			driverNanos[0] += System.nanoTime() - started;
			this.scratch.release(data);
		}
		if (result != CudaErrors.SUCCESS) {
			if (result == CudaErrors.OUT_OF_MEMORY) {
				throw CudaErrors.toException(result, "cuModuleLoadDataEx (kernel '" + kernelName + "')", null, null, image.length);
			}
			if (CudaErrors.isSticky(result)) {
				this.backend.markUnhealthy(CudaErrors.stickyProblem(result, "cuModuleLoadDataEx", kernelName, null));
			}
			byte[] log = jit.getBytes(CUjit_option.CU_JIT_ERROR_LOG_BUFFER);
			throw new KernelCompilationException(kernelName, "the driver rejected its " + origin + " code: cuModuleLoadDataEx returned "
					+ CudaErrors.describe(result) + CudaErrors.hint(result), CudaFormat.cString((log != null) ? log : errorLog), null);
		}
		return module;
	}

	private CudaKernel bind(String name, CUmodule module, String origin, long loadNanos) {
		// Again: giving the image's block back after the load may have waited for the blocks' lock.
		this.backend.resume();
		CUfunction function = new CUfunction();
		int result = cuModuleGetFunction(function, module, name);
		if (result != CudaErrors.SUCCESS) {
			cuModuleUnload(module);
			if (result == CudaErrors.NOT_FOUND) {
				throw new KernelCompilationException(name, "its code (" + origin + ") has no kernel named '" + name
						+ "'; declare it extern \"C\" __global__ so that its name is not mangled", null, null);
			}
			throw new KernelCompilationException(name, "cuModuleGetFunction returned " + CudaErrors.describe(result), null, null);
		}
		this.modules.add(module);
		int staticShared = functionAttribute(function, CUfunction_attribute.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, 0);
		int dynamicLimit = functionAttribute(function, CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
				SharedMemoryOptIn.defaultDynamicLimit(staticShared));
		return new CudaKernel(this.backend, name, module, function, origin, staticShared, dynamicLimit, loadNanos);
	}

	/** A function attribute, or {@code fallback} when the driver does not answer. */
	private static int functionAttribute(CUfunction function, int attribute, int fallback) {
		int[] value = new int[1];
		return (cuFuncGetAttribute(value, attribute, function) == CudaErrors.SUCCESS) ? value[0] : fallback;
	}

	long compileCount() {
		return this.compileCount.get();
	}

	long cacheHits() {
		return this.cacheHits.get();
	}

	long prebuiltLoads() {
		return this.prebuiltLoads.get();
	}

	@Nullable Path kernelCacheDir() {
		return (this.cache != null) ? this.cache.directory() : null;
	}

	String compilerDescription() {
		return this.compiler.describe();
	}

	/**
	 * Unloads every module and frees the host memory of launches and loads, without throwing (backend
	 * close, after the device was synchronised and {@link #awaitCallsInFlight}); the blocks of calls
	 * still running are freed when they return.
	 * @return host blocks still lent by calls that raced the close
	 */
	int unloadAll() {
		CUmodule module;
		while ((module = this.modules.poll()) != null) {
			cuModuleUnload(module);
		}
		try {
			return this.scratch.close();
		}
		catch (RuntimeException ex) {
			logger.warn("Freeing the host memory of launches and module loads failed", ex);
			return 0;
		}
	}

	/**
	 * Waits up to {@code timeoutNanos} for launches with arguments and module loads that are still
	 * in a driver call (they hold a host block for it) to return: backend close, before it destroys
	 * what they use.
	 * @return how many are still running
	 */
	int awaitCallsInFlight(long timeoutNanos) {
		return this.scratch.awaitReturned(timeoutNanos);
	}

	/** The host memory of launch arguments and module images (diagnostics and tests). */
	HostBlocks.Stats hostScratch() {
		return this.scratch.stats();
	}

	// ---------------------------------------------------------------- launch

	/** Enqueues a launch; the caller has entered the backend and checked kernel and stream. */
	void launch(CudaKernel kernel, LaunchConfig config, LaunchArgs args, CudaStream stream) {
		int shared = config.sharedMemoryBytes();
		if (shared > kernel.dynamicSharedLimit) {
			optIn(kernel, shared);
		}
		Dim3 grid = config.grid();
		Dim3 block = config.block();
		// One fully written 8-byte slot per parameter and the table of their addresses, in a block of
		// host memory lent for this call only: the driver copies the values at the launch.
		HostBlocks.Block<CudaHostScratch.Chunk> arguments = (args.count() == 0) ? null
				: this.scratch.arguments(args, this.addresses, kernel.name());
		int result;
		try {
			if (arguments != null) {
				// Again: taking a block may wait for its lock, which moves a virtual thread to another carrier.
				this.backend.enterQuietly();
			}
			stream.lastKernel = kernel.name();
			result = cuLaunchKernel(kernel.function, grid.x(), grid.y(), grid.z(), block.x(), block.y(), block.z(), shared,
					stream.handle, (arguments != null) ? CudaHostScratch.table(arguments) : null, null);
		}
		finally {
			if (arguments != null) {
				this.scratch.release(arguments);
			}
		}
		if (result != CudaErrors.SUCCESS) {
			throw this.backend.failure(result, "cuLaunchKernel", kernel.name(), stream);
		}
	}

	private long argumentAddress(NativeMemory memory, int index, String kernelName) {
		if (memory instanceof CudaMemory cudaMemory && cudaMemory.backend == this.backend && !cudaMemory.isFreed()) {
			return cudaMemory.address;
		}
		if (memory instanceof CudaMemory cudaMemory && cudaMemory.backend == this.backend) {
			throw new GpuException("Argument " + index + " of kernel '" + kernelName + "' is a freed device buffer");
		}
		throw new ContextClosedException("Argument " + index + " of kernel '" + kernelName
				+ "' is not a buffer of the CUDA backend of device " + this.facts.ordinal + ": " + memory);
	}

	/**
	 * Raises the kernel's dynamic shared memory limit to {@code bytes}, after checking that its static
	 * shared memory and {@code bytes} fit the device's per-block limit together.
	 */
	private void optIn(CudaKernel kernel, int bytes) {
		synchronized (kernel) {
			// Again, before anything else: waiting for the lock may have moved a virtual thread to another
			// carrier, and a launch without arguments goes to the driver right after this.
			this.backend.enter();
			if (SharedMemoryOptIn.target(kernel.name(), bytes, kernel.staticSharedBytes, kernel.dynamicSharedLimit,
					this.facts.info.maxSharedMemoryPerBlock()) < 0) {
				return;
			}
			int result = cuFuncSetAttribute(kernel.function, CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
					bytes);
			if (result != CudaErrors.SUCCESS) {
				throw new InvalidLaunchConfigException("Kernel '" + kernel.name() + "' cannot use " + bytes
						+ " bytes of dynamic shared memory: cuFuncSetAttribute returned " + CudaErrors.describe(result));
			}
			kernel.dynamicSharedLimit = bytes;
		}
	}

}
