package dev.gpucompute.cuda;

import static jcuda.driver.JCudaDriver.cuCtxGetStreamPriorityRange;
import static jcuda.driver.JCudaDriver.cuCtxSetCurrent;
import static jcuda.driver.JCudaDriver.cuCtxSynchronize;
import static jcuda.driver.JCudaDriver.cuDeviceGet;
import static jcuda.driver.JCudaDriver.cuDeviceGetName;
import static jcuda.driver.JCudaDriver.cuDeviceGetPCIBusId;
import static jcuda.driver.JCudaDriver.cuDeviceGetUuid;
import static jcuda.driver.JCudaDriver.cuDevicePrimaryCtxRelease;
import static jcuda.driver.JCudaDriver.cuDevicePrimaryCtxRetain;
import static jcuda.driver.JCudaDriver.cuDeviceTotalMem;
import static jcuda.driver.JCudaDriver.cuEventCreate;
import static jcuda.driver.JCudaDriver.cuEventDestroy;
import static jcuda.driver.JCudaDriver.cuEventQuery;
import static jcuda.driver.JCudaDriver.cuFuncSetAttribute;
import static jcuda.driver.JCudaDriver.cuLaunchKernel;
import static jcuda.driver.JCudaDriver.cuMemAlloc;
import static jcuda.driver.JCudaDriver.cuMemAllocAsync;
import static jcuda.driver.JCudaDriver.cuMemAllocHost;
import static jcuda.driver.JCudaDriver.cuMemFree;
import static jcuda.driver.JCudaDriver.cuMemFreeAsync;
import static jcuda.driver.JCudaDriver.cuMemFreeHost;
import static jcuda.driver.JCudaDriver.cuMemGetInfo;
import static jcuda.driver.JCudaDriver.cuMemcpyDtoDAsync;
import static jcuda.driver.JCudaDriver.cuMemcpyDtoHAsync;
import static jcuda.driver.JCudaDriver.cuMemcpyHtoDAsync;
import static jcuda.driver.JCudaDriver.cuMemsetD8Async;
import static jcuda.driver.JCudaDriver.cuModuleGetFunction;
import static jcuda.driver.JCudaDriver.cuModuleLoadDataJIT;
import static jcuda.driver.JCudaDriver.cuModuleUnload;
import static jcuda.driver.JCudaDriver.cuStreamCreateWithPriority;
import static jcuda.driver.JCudaDriver.cuStreamSynchronize;

import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.lang.reflect.Method;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import dev.gpucompute.Backend;
import dev.gpucompute.BackendUnavailableException;
import dev.gpucompute.ContextClosedException;
import dev.gpucompute.DefaultStreamMode;
import dev.gpucompute.DeviceInfo;
import dev.gpucompute.Dim3;
import dev.gpucompute.GpuException;
import dev.gpucompute.GpuOutOfMemoryException;
import dev.gpucompute.InvalidLaunchConfigException;
import dev.gpucompute.KernelCompilationException;
import dev.gpucompute.KernelSource;
import dev.gpucompute.LaunchConfig;
import dev.gpucompute.MemoryInfo;
import dev.gpucompute.StreamPriority;
import dev.gpucompute.spi.BackendConfig;
import dev.gpucompute.spi.BackendListener;
import dev.gpucompute.spi.DeviceBackend;
import dev.gpucompute.spi.LaunchArgs;
import dev.gpucompute.spi.NativeEvent;
import dev.gpucompute.spi.NativeKernel;
import dev.gpucompute.spi.NativeMemory;
import dev.gpucompute.spi.NativeStream;
import jcuda.NativePointerObject;
import jcuda.Pointer;
import jcuda.driver.CUcontext;
import jcuda.driver.CUdevice;
import jcuda.driver.CUdevice_attribute;
import jcuda.driver.CUevent;
import jcuda.driver.CUevent_flags;
import jcuda.driver.CUfunction;
import jcuda.driver.CUfunction_attribute;
import jcuda.driver.CUjit_option;
import jcuda.driver.CUmemPool_attribute;
import jcuda.driver.CUmemoryPool;
import jcuda.driver.CUmodule;
import jcuda.driver.CUstream;
import jcuda.driver.CUstream_flags;
import jcuda.driver.CUuuid;
import jcuda.driver.JCudaDriver;
import jcuda.driver.JITOptions;

/**
 * One CUDA device, opened by {@link CudaBackendProvider}.
 *
 * <p>The device's primary context is retained once and made current on each calling thread the
 * first time that thread uses this backend (a thread-local check, no driver call afterwards).
 * Besides the SPI, it exposes a few facts for diagnostics and tests: {@link #compileCount()} and
 * {@link #cacheHits()} of the kernel compiler and its disk cache, whether the stream-ordered
 * allocator is in use, and whether the pool release threshold could be applied.
 */
public final class CudaDeviceBackend implements DeviceBackend {

	private static final Logger logger = LoggerFactory.getLogger(CudaDeviceBackend.class);

	private static final AtomicLong IDS = new AtomicLong();

	/** {@code Thread.isVirtual()} (Java 21+), looked up reflectively: the code is compiled for Java 17. */
	private static final MethodHandle IS_VIRTUAL = isVirtualHandle();

	/**
	 * Per host thread: [0] the id of the backend whose context this thread last made current; [1] 1
	 * when the thread is virtual. A CUDA context is current on an OS thread, and a virtual thread
	 * can move to another carrier thread whenever it blocks, so for a virtual thread the cached id
	 * proves nothing and {@link #enter()} sets the context on every call.
	 */
	private static final ThreadLocal<long[]> CURRENT = ThreadLocal
			.withInitial(() -> new long[] { 0, isVirtual(Thread.currentThread()) ? 1 : 0 });

	/** Per host thread: its per-thread default stream (one slot; replaced when another backend asks). */
	private static final ThreadLocal<CudaStream[]> PER_THREAD = ThreadLocal.withInitial(() -> new CudaStream[1]);

	/**
	 * Sticky failures by device ordinal. Every backend of a device shares the device's primary
	 * context, so a sticky error seen by one makes all of them unhealthy.
	 */
	private static final Map<Integer, String> DEVICE_PROBLEMS = new ConcurrentHashMap<>();

	/** Per host thread: reusable kernel-argument storage. */
	private static final ThreadLocal<LaunchScratch> SCRATCH = ThreadLocal.withInitial(LaunchScratch::new);

	private final long id = IDS.incrementAndGet();

	private final int ordinal;

	private final CUdevice device;

	private final CUcontext context;

	private final DeviceInfo info;

	private final int major;

	private final int minor;

	private final int driverVersion;

	private final int leastPriority;

	private final int greatestPriority;

	private final boolean streamOrderedAllocator;

	private final boolean releaseThresholdApplied;

	private final CudaCompiler compiler;

	private final KernelCache cache;

	private final List<String> compileOptions;

	private final CudaStream legacy;

	private final Set<CudaStream> streams = ConcurrentHashMap.newKeySet();

	private final Set<CudaEvent> events = ConcurrentHashMap.newKeySet();

	private final Set<CudaMemory> allocations = ConcurrentHashMap.newKeySet();

	private final Map<ByteBuffer, Pointer> staging = Collections.synchronizedMap(new IdentityHashMap<>());

	private final Queue<CUmodule> modules = new ConcurrentLinkedQueue<>();

	/** Compiled PTX by cache key, so a kernel loaded twice is compiled once per backend. */
	private final Map<String, byte[]> compiled = new ConcurrentHashMap<>();

	private final AtomicLong usedBytes = new AtomicLong();

	private final AtomicLong liveBuffers = new AtomicLong();

	private final AtomicLong compileCount = new AtomicLong();

	private final AtomicLong cacheHits = new AtomicLong();

	private final AtomicBoolean closed = new AtomicBoolean();

	private volatile boolean closedFlag;

	private volatile String healthProblem;

	private final BackendListener listener;

	/** Set when the context gave up on pending work at close: device work may still run then. */
	private volatile boolean abandoned;

	CudaDeviceBackend(BackendConfig config, CudaCompiler compiler) {
		CudaDriver.State driver = CudaDriver.init();
		if (!driver.ok()) {
			throw new BackendUnavailableException(Backend.CUDA, driver.failure(), driver.cause());
		}
		this.ordinal = config.ordinal();
		this.listener = config.listener();
		this.driverVersion = driver.driverVersion();
		this.compiler = compiler;
		this.compileOptions = List.copyOf(config.compileOptions());
		this.cache = (config.kernelCacheDir() != null) ? new KernelCache(config.kernelCacheDir()) : null;
		this.device = new CUdevice();
		int result = cuDeviceGet(this.device, this.ordinal);
		if (result != CudaErrors.SUCCESS) {
			throw new BackendUnavailableException(Backend.CUDA,
					"device " + this.ordinal + " could not be opened: cuDeviceGet returned " + CudaErrors.describe(result), null);
		}
		this.context = new CUcontext();
		result = cuDevicePrimaryCtxRetain(this.context, this.device);
		if (result != CudaErrors.SUCCESS) {
			throw new BackendUnavailableException(Backend.CUDA, "the primary context of device " + this.ordinal
					+ " could not be retained: " + CudaErrors.describe(result), null);
		}
		boolean opened = false;
		try {
			CudaDriver.check(cuCtxSetCurrent(this.context), "cuCtxSetCurrent");
			CURRENT.get()[0] = this.id;
			this.major = CudaDriver.attribute(this.device, CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
			this.minor = CudaDriver.attribute(this.device, CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
			this.info = readInfo();
			int[] least = new int[1];
			int[] greatest = new int[1];
			CudaDriver.check(cuCtxGetStreamPriorityRange(least, greatest), "cuCtxGetStreamPriorityRange");
			this.leastPriority = least[0];
			this.greatestPriority = greatest[0];
			this.streamOrderedAllocator = CudaDriver.attribute(this.device,
					CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED) != 0;
			this.releaseThresholdApplied = this.streamOrderedAllocator
					&& applyReleaseThreshold(this.device, config.memoryPoolReleaseThreshold());
			this.legacy = new CudaStream(this, JCudaDriver.CU_STREAM_LEGACY, "default-legacy", CudaStream.Kind.LEGACY, 0);
			String earlier = DEVICE_PROBLEMS.get(this.ordinal);
			if (earlier != null && cuCtxSynchronize() == CudaErrors.SUCCESS) {
				DEVICE_PROBLEMS.remove(this.ordinal, earlier); // the context was recreated since; it is healthy again
			}
			opened = true;
		}
		catch (GpuException ex) {
			throw new BackendUnavailableException(Backend.CUDA, "device " + this.ordinal + " could not be opened: "
					+ ex.getMessage(), ex);
		}
		finally {
			if (!opened) {
				cuDevicePrimaryCtxRelease(this.device);
				CURRENT.get()[0] = 0;
			}
		}
		logger.info("CUDA device {}: {} (compute capability {}, {} SMs, {}), driver {}, {} allocator, stream priorities {}..{}",
				this.ordinal, this.info.name(), this.info.computeCapability(), this.info.multiprocessors(),
				CudaFormat.bytes(this.info.totalMemoryBytes()), this.info.driverVersion(),
				this.streamOrderedAllocator ? "stream-ordered" : "synchronous", this.leastPriority, this.greatestPriority);
	}

	private DeviceInfo readInfo() {
		byte[] name = new byte[256];
		CudaDriver.check(cuDeviceGetName(name, name.length, this.device), "cuDeviceGetName");
		CUuuid uuid = new CUuuid();
		CudaDriver.check(cuDeviceGetUuid(uuid, this.device), "cuDeviceGetUuid");
		String[] pciBusId = new String[1];
		CudaDriver.check(cuDeviceGetPCIBusId(pciBusId, 64, this.device), "cuDeviceGetPCIBusId");
		long[] totalMemory = new long[1];
		CudaDriver.check(cuDeviceTotalMem(totalMemory, this.device), "cuDeviceTotalMem");
		int sharedOptIn = attribute(CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
		int shared = (sharedOptIn > 0) ? sharedOptIn
				: attribute(CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK);
		return new DeviceInfo(Backend.CUDA, this.ordinal, CudaFormat.cString(name), CudaFormat.uuid(uuid.bytes),
				(pciBusId[0] != null) ? pciBusId[0].replace("\0", "").strip() : "", this.major + "." + this.minor,
				attribute(CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT), totalMemory[0],
				CudaFormat.driverVersion(this.driverVersion),
				attribute(CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK),
				new Dim3(attribute(CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X),
						attribute(CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y),
						attribute(CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z)),
				new Dim3(attribute(CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X),
						attribute(CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y),
						attribute(CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z)),
				shared, attribute(CUdevice_attribute.CU_DEVICE_ATTRIBUTE_WARP_SIZE));
	}

	private int attribute(int attribute) {
		return CudaDriver.attribute(this.device, attribute);
	}

	/**
	 * Sets {@code CU_MEMPOOL_ATTR_RELEASE_THRESHOLD} on the device's default pool. JCuda 12.6.0
	 * binds {@code cuMemAllocAsync}/{@code cuMemFreeAsync} but not {@code cuDeviceGetDefaultMemPool}
	 * or {@code cuMemPoolSetAttribute}; they are looked up reflectively, so a JCuda that has them is
	 * used, and without them the pool keeps CUDA's default threshold (0).
	 */
	private static boolean applyReleaseThreshold(CUdevice device, long threshold) {
		Method getPool;
		Method setAttribute;
		try {
			getPool = JCudaDriver.class.getMethod("cuDeviceGetDefaultMemPool", CUmemoryPool.class, CUdevice.class);
			setAttribute = JCudaDriver.class.getMethod("cuMemPoolSetAttribute", CUmemoryPool.class, int.class, Pointer.class);
		}
		catch (NoSuchMethodException ex) {
			if (threshold > 0) {
				logger.info("This JCuda has no binding for cuMemPoolSetAttribute, so the memory pool release threshold "
						+ "({} bytes) is not applied: unused pool memory is returned to the driver at each synchronisation "
						+ "(CUDA's default threshold, 0)", threshold);
			}
			return false;
		}
		try {
			CUmemoryPool pool = new CUmemoryPool();
			int result = (Integer) getPool.invoke(null, pool, device);
			if (result == CudaErrors.SUCCESS) {
				result = (Integer) setAttribute.invoke(null, pool, CUmemPool_attribute.CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
						Pointer.to(new long[] { Math.max(0, threshold) }));
			}
			if (result != CudaErrors.SUCCESS) {
				logger.warn("Could not set the memory pool release threshold: {}", CudaErrors.describe(result));
			}
			return result == CudaErrors.SUCCESS;
		}
		catch (ReflectiveOperationException | RuntimeException ex) {
			logger.warn("Could not set the memory pool release threshold: {}", ex.toString());
			return false;
		}
	}

	// ---------------------------------------------------------------- context and handles

	/**
	 * Makes this backend's context current on the calling thread, unless it already is (then no
	 * driver call is made), after checking the backend is open.
	 */
	void enter() {
		if (this.closedFlag) {
			throw new ContextClosedException("The CUDA backend of device " + this.ordinal + " is closed");
		}
		long[] current = CURRENT.get();
		if (current[0] != this.id || current[1] != 0) {
			int result = cuCtxSetCurrent(this.context);
			if (result != CudaErrors.SUCCESS) {
				throw failure(result, "cuCtxSetCurrent", null, null);
			}
			current[0] = this.id;
		}
	}

	boolean isClosed() {
		return this.closedFlag;
	}

	/** Whether {@code thread} is a virtual thread; always {@code false} before Java 21. */
	static boolean isVirtual(Thread thread) {
		if (IS_VIRTUAL == null) {
			return false;
		}
		try {
			return (boolean) IS_VIRTUAL.invokeExact(thread);
		}
		catch (Throwable ex) {
			return false;
		}
	}

	private static MethodHandle isVirtualHandle() {
		try {
			return MethodHandles.publicLookup().findVirtual(Thread.class, "isVirtual", MethodType.methodType(boolean.class));
		}
		catch (ReflectiveOperationException | RuntimeException ex) {
			return null; // Java 17..20: no virtual threads
		}
	}

	CudaStream stream(NativeStream stream) {
		if (stream instanceof CudaStream cudaStream && cudaStream.backend == this) {
			if (cudaStream.isDestroyed()) {
				throw new GpuException("Stream " + cudaStream.name() + " was destroyed");
			}
			return cudaStream;
		}
		throw new ContextClosedException("Stream " + stream + " does not belong to the CUDA backend of device " + this.ordinal);
	}

	CudaEvent event(NativeEvent event) {
		if (event instanceof CudaEvent cudaEvent && cudaEvent.backend == this) {
			return cudaEvent;
		}
		throw new ContextClosedException("Event " + event + " does not belong to the CUDA backend of device " + this.ordinal);
	}

	private CudaMemory memory(NativeMemory memory) {
		if (memory instanceof CudaMemory cudaMemory && cudaMemory.backend == this) {
			if (cudaMemory.isFreed()) {
				throw new GpuException("Device buffer " + cudaMemory + " was already freed");
			}
			return cudaMemory;
		}
		throw new ContextClosedException("Buffer " + memory + " does not belong to the CUDA backend of device " + this.ordinal);
	}

	private CudaKernel kernel(NativeKernel kernel) {
		if (kernel instanceof CudaKernel cudaKernel && cudaKernel.backend == this) {
			return cudaKernel;
		}
		throw new ContextClosedException("Kernel " + kernel + " was not loaded by the CUDA backend of device " + this.ordinal);
	}

	void forget(CudaStream stream) {
		this.streams.remove(stream);
	}

	void forget(CudaEvent event) {
		this.events.remove(event);
	}

	// ---------------------------------------------------------------- errors and health

	/** Maps a failed call; a sticky code marks the backend unhealthy first. */
	GpuException failure(int code, String call, String kernel, CudaStream stream) {
		String streamName = (stream != null) ? stream.name() : null;
		if (CudaErrors.isSticky(code)) {
			markUnhealthy(CudaErrors.stickyProblem(code, call, kernel, streamName), kernel);
		}
		return CudaErrors.toException(code, call, kernel, streamName, 0);
	}

	/** A failure found on a stream: it names the stream and the last kernel launched on it. */
	GpuException streamFailure(int code, String call, CudaStream stream) {
		return failure(code, call, stream.lastKernel, stream);
	}

	/**
	 * The failure a stream callback reports for {@code status}, built without any CUDA call (the
	 * driver forbids them in callbacks). A sticky status marks the backend unhealthy.
	 */
	GpuException asyncFailure(int status, CudaStream stream) {
		String kernel = stream.lastKernel;
		if (CudaErrors.isSticky(status)) {
			markUnhealthy(CudaErrors.stickyProblem(status, "work on the stream", kernel, stream.name(), false), kernel);
		}
		return CudaErrors.toException(status, "work on the stream", kernel, stream.name(), 0, false);
	}

	private void markUnhealthy(String problem) {
		markUnhealthy(problem, null);
	}

	/**
	 * Records the first sticky failure: health goes DOWN, and the failure is counted once, against
	 * the kernel that ran last on the stream where it was found (CUDA does not say which kernel of the
	 * context caused it).
	 */
	private void markUnhealthy(String problem, String kernel) {
		synchronized (this) {
			if (this.healthProblem != null) {
				return;
			}
			this.healthProblem = problem;
		}
		DEVICE_PROBLEMS.putIfAbsent(this.ordinal, problem);
		logger.error(problem);
		if (kernel != null) {
			try {
				this.listener.kernelFailed(kernel, new GpuException(problem));
			}
			catch (RuntimeException ex) {
				logger.warn("The failure listener threw", ex);
			}
		}
	}

	/**
	 * The sticky failure this backend saw, or one another backend of the same device saw (they
	 * share the primary context), or {@code null}.
	 */
	@Override
	public String healthProblem() {
		String problem = this.healthProblem;
		return (problem != null) ? problem : DEVICE_PROBLEMS.get(this.ordinal);
	}

	// ---------------------------------------------------------------- device

	@Override
	public DeviceInfo info() {
		return this.info;
	}

	@Override
	public NativeStream createStream(StreamPriority priority, String name) {
		enter();
		int cudaPriority = (priority == StreamPriority.HIGH) ? this.greatestPriority
				: Math.max(this.greatestPriority, Math.min(this.leastPriority, 0));
		CUstream handle = new CUstream();
		int result = cuStreamCreateWithPriority(handle, CUstream_flags.CU_STREAM_NON_BLOCKING, cudaPriority);
		if (result != CudaErrors.SUCCESS) {
			throw failure(result, "cuStreamCreateWithPriority", null, null);
		}
		CudaStream stream = new CudaStream(this, handle, name, CudaStream.Kind.CREATED, cudaPriority);
		this.streams.add(stream);
		return stream;
	}

	/**
	 * {@inheritDoc}
	 * <p>A virtual thread gets the legacy default stream in both modes: {@code CU_STREAM_PER_THREAD}
	 * names the stream of the OS thread that makes the call, and a virtual thread changes carrier
	 * threads when it blocks, so its work would be spread over several streams with no order
	 * between them (a download could overtake the kernel that writes its data).
	 */
	@Override
	public NativeStream defaultStream(DefaultStreamMode mode) {
		if (mode == DefaultStreamMode.LEGACY || CURRENT.get()[1] != 0) {
			return this.legacy;
		}
		CudaStream[] slot = PER_THREAD.get();
		CudaStream stream = slot[0];
		if (stream == null || stream.backend != this) {
			stream = new CudaStream(this, JCudaDriver.CU_STREAM_PER_THREAD,
					"default-per-thread[" + Thread.currentThread().getName() + "]", CudaStream.Kind.PER_THREAD, 0);
			slot[0] = stream;
		}
		return stream;
	}

	@Override
	public NativeEvent createEvent(boolean timing) {
		enter();
		CUevent handle = new CUevent();
		int result = cuEventCreate(handle, timing ? CUevent_flags.CU_EVENT_DEFAULT : CUevent_flags.CU_EVENT_DISABLE_TIMING);
		if (result != CudaErrors.SUCCESS) {
			throw failure(result, "cuEventCreate", null, null);
		}
		CudaEvent event = new CudaEvent(this, handle, timing);
		this.events.add(event);
		return event;
	}

	// ---------------------------------------------------------------- kernels

	@Override
	public NativeKernel loadKernel(KernelSource source) {
		enter();
		String name = source.name();
		KernelSource.CudaForm form = source.cudaForm();
		if (form == null) {
			throw new KernelCompilationException(name, "it has no CUDA code, only a CPU implementation; give it "
					+ ".cuda(source), .ptx(text), .cubin(image), .fatbin(image) or .cudaResource(path)", null, null);
		}
		byte[] code = source.cudaCode();
		if (form == KernelSource.CudaForm.SOURCE) {
			List<String> options = new ArrayList<>(this.compileOptions);
			options.addAll(source.compileOptions());
			String key = KernelCache.key(code, options, "compute_" + this.major + this.minor, this.driverVersion);
			Compiled ptx = compiledPtx(name, code, options, key);
			try {
				return bind(name, loadModule(name, ptx.bytes(), ptx.origin()), ptx.origin());
			}
			catch (KernelCompilationException ex) {
				if (!ptx.fromDiskCache()) {
					throw ex;
				}
				// A cached entry the driver rejects (corrupt, or from an incompatible compiler): drop it, compile again.
				logger.warn("Cached code for kernel '{}' was rejected ({}); compiling it again", name, ex.getMessage());
				this.cache.evict(name, key);
				this.compiled.remove(key);
				Compiled fresh = compile(name, code, options, key);
				return bind(name, loadModule(name, fresh.bytes(), fresh.origin()), fresh.origin());
			}
		}
		String origin = form.name().toLowerCase(java.util.Locale.ROOT);
		return bind(name, loadModule(name, code, origin), origin);
	}

	private record Compiled(byte[] bytes, String origin, boolean fromDiskCache) {
	}

	private Compiled compiledPtx(String name, byte[] code, List<String> options, String key) {
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
				this.major, this.minor);
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
	 * {@code cuModuleLoadDataEx}.
	 */
	private CUmodule loadModule(String kernelName, byte[] image, String origin) {
		// A direct copy with a terminating NUL (PTX must be NUL-terminated): the driver reads it
		// while JIT-compiling, so no Java array is pinned for that long.
		ByteBuffer data = ByteBuffer.allocateDirect(image.length + 1);
		data.put(image).put((byte) 0);
		byte[] errorLog = new byte[16 * 1024];
		JITOptions jit = new JITOptions();
		jit.putBytes(CUjit_option.CU_JIT_ERROR_LOG_BUFFER, errorLog);
		jit.putInt(CUjit_option.CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, errorLog.length);
		CUmodule module = new CUmodule();
		enter(); // again: compiling and reading the cache block, which may move a virtual thread to another carrier
		int result = cuModuleLoadDataJIT(module, Pointer.to(data), jit);
		if (result != CudaErrors.SUCCESS) {
			if (result == CudaErrors.OUT_OF_MEMORY) {
				throw CudaErrors.toException(result, "cuModuleLoadDataEx (kernel '" + kernelName + "')", null, null, image.length);
			}
			if (CudaErrors.isSticky(result)) {
				markUnhealthy(CudaErrors.stickyProblem(result, "cuModuleLoadDataEx", kernelName, null));
			}
			byte[] log = jit.getBytes(CUjit_option.CU_JIT_ERROR_LOG_BUFFER);
			throw new KernelCompilationException(kernelName, "the driver rejected its " + origin + " code: cuModuleLoadDataEx returned "
					+ CudaErrors.describe(result) + CudaErrors.hint(result), CudaFormat.cString((log != null) ? log : errorLog), null);
		}
		return module;
	}

	private CudaKernel bind(String name, CUmodule module, String origin) {
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
		return new CudaKernel(this, name, module, function, origin);
	}

	/** How many kernels this backend compiled from CUDA C (not counting cache hits). */
	public long compileCount() {
		return this.compileCount.get();
	}

	/** How many CUDA C kernels this backend took from a cache (its disk cache or its own memory). */
	public long cacheHits() {
		return this.cacheHits.get();
	}

	/** The compiled-kernel cache directory, or {@code null} when there is no disk cache. */
	public Path kernelCacheDir() {
		return (this.cache != null) ? this.cache.directory() : null;
	}

	/** What compiles CUDA C here (NVRTC, nvcc, or none and why). */
	public String compilerDescription() {
		return this.compiler.describe();
	}

	// ---------------------------------------------------------------- launch

	@Override
	public void launch(NativeKernel nativeKernel, LaunchConfig config, LaunchArgs args, NativeStream nativeStream) {
		CudaKernel kernel = kernel(nativeKernel);
		CudaStream stream = stream(nativeStream);
		enter();
		int shared = config.sharedMemoryBytes();
		if (shared > kernel.dynamicSharedLimit) {
			optIn(kernel, shared);
		}
		Pointer params = pack(args, kernel);
		Dim3 grid = config.grid();
		Dim3 block = config.block();
		stream.lastKernel = kernel.name();
		int result = cuLaunchKernel(kernel.function, grid.x(), grid.y(), grid.z(), block.x(), block.y(), block.z(), shared,
				stream.handle, params, null);
		if (result != CudaErrors.SUCCESS) {
			throw failure(result, "cuLaunchKernel", kernel.name(), stream);
		}
	}

	/**
	 * Packs the arguments into this thread's scratch: one 8-byte slot per parameter (an int or a
	 * float uses the first 4 bytes; the driver copies each parameter's own size) and a cached
	 * {@code void*[]} of slot addresses per arity, so a launch allocates nothing.
	 */
	private Pointer pack(LaunchArgs args, CudaKernel kernel) {
		int count = args.count();
		if (count == 0) {
			return null;
		}
		LaunchScratch scratch = SCRATCH.get();
		ByteBuffer values = scratch.values(count);
		for (int i = 0; i < count; i++) {
			int at = i << 3;
			switch (args.type(i)) {
				case INT -> values.putInt(at, args.i32(i));
				case LONG -> values.putLong(at, args.i64(i));
				case FLOAT -> values.putFloat(at, args.f32(i));
				case DOUBLE -> values.putDouble(at, args.f64(i));
				case BUFFER -> values.putLong(at, argumentMemory(args.memory(i), kernel, i).address);
			}
		}
		return scratch.params(count);
	}

	private CudaMemory argumentMemory(NativeMemory memory, CudaKernel kernel, int index) {
		if (memory instanceof CudaMemory cudaMemory && cudaMemory.backend == this && !cudaMemory.isFreed()) {
			return cudaMemory;
		}
		if (memory instanceof CudaMemory cudaMemory && cudaMemory.backend == this) {
			throw new GpuException("Argument " + index + " of kernel '" + kernel.name() + "' is a freed device buffer");
		}
		throw new ContextClosedException("Argument " + index + " of kernel '" + kernel.name()
				+ "' is not a buffer of the CUDA backend of device " + this.ordinal + ": " + memory);
	}

	private void optIn(CudaKernel kernel, int bytes) {
		synchronized (kernel) {
			if (bytes <= kernel.dynamicSharedLimit) {
				return;
			}
			enter(); // again: waiting for the lock may have moved a virtual thread to another carrier
			int result = cuFuncSetAttribute(kernel.function, CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
					bytes);
			if (result != CudaErrors.SUCCESS) {
				throw new InvalidLaunchConfigException("Kernel '" + kernel.name() + "' cannot use " + bytes
						+ " bytes of dynamic shared memory: cuFuncSetAttribute returned " + CudaErrors.describe(result));
			}
			kernel.dynamicSharedLimit = bytes;
		}
	}

	/** Reusable launch-argument storage of one host thread. */
	private static final class LaunchScratch {

		private ByteBuffer values;

		private Pointer[] paramsByCount;

		LaunchScratch() {
			allocate(16);
		}

		private void allocate(int slots) {
			this.values = ByteBuffer.allocateDirect(slots * 8).order(ByteOrder.nativeOrder());
			this.paramsByCount = new Pointer[slots + 1];
		}

		ByteBuffer values(int count) {
			if (count * 8 > this.values.capacity()) {
				allocate(Math.max(count, this.values.capacity() / 4));
			}
			return this.values;
		}

		Pointer params(int count) {
			Pointer params = this.paramsByCount[count];
			if (params == null) {
				Pointer base = Pointer.to(this.values);
				NativePointerObject[] slots = new NativePointerObject[count];
				for (int i = 0; i < count; i++) {
					slots[i] = base.withByteOffset(8L * i);
				}
				params = Pointer.to(slots);
				this.paramsByCount[count] = params;
			}
			return params;
		}

	}

	// ---------------------------------------------------------------- memory

	@Override
	public NativeMemory allocate(long bytes, NativeStream nativeStream) {
		if (bytes < 0) {
			throw new IllegalArgumentException("Cannot allocate " + bytes + " bytes");
		}
		CudaStream stream = stream(nativeStream);
		enter();
		DevicePointer pointer = new DevicePointer();
		long size = Math.max(bytes, 1);
		int result = this.streamOrderedAllocator ? cuMemAllocAsync(pointer, size, stream.handle) : cuMemAlloc(pointer, size);
		if (result != CudaErrors.SUCCESS) {
			String call = this.streamOrderedAllocator ? "cuMemAllocAsync" : "cuMemAlloc";
			if (CudaErrors.isSticky(result)) {
				markUnhealthy(CudaErrors.stickyProblem(result, call, stream.lastKernel, stream.name()));
			}
			throw CudaErrors.toException(result, call, null, stream.name(), bytes);
		}
		CudaMemory memory = new CudaMemory(this, pointer, bytes, this.streamOrderedAllocator);
		this.allocations.add(memory);
		this.usedBytes.addAndGet(bytes);
		this.liveBuffers.incrementAndGet();
		return memory;
	}

	@Override
	public void free(NativeMemory nativeMemory, NativeStream nativeStream) {
		if (!(nativeMemory instanceof CudaMemory memory) || memory.backend != this) {
			throw new ContextClosedException("Buffer " + nativeMemory + " does not belong to the CUDA backend of device " + this.ordinal);
		}
		CudaStream stream = stream(nativeStream);
		if (!memory.markFreed()) {
			return;
		}
		this.allocations.remove(memory);
		this.usedBytes.addAndGet(-memory.byteSize());
		this.liveBuffers.decrementAndGet();
		enter();
		int result;
		if (memory.streamOrdered) {
			result = cuMemFreeAsync(memory.pointer, stream.handle);
		}
		else {
			// cuMemFree is not stream-ordered: wait for the stream's work first, as the SPI promises.
			result = cuStreamSynchronize(stream.handle);
			if (result == CudaErrors.SUCCESS) {
				result = cuMemFree(memory.pointer);
			}
		}
		if (result != CudaErrors.SUCCESS) {
			throw streamFailure(result, memory.streamOrdered ? "cuMemFreeAsync" : "cuMemFree", stream);
		}
	}

	@Override
	public void copyToDevice(ByteBuffer src, NativeMemory dst, long dstOffset, long bytes, NativeStream nativeStream) {
		CudaMemory memory = memory(dst);
		CudaStream stream = stream(nativeStream);
		checkHost(src, bytes, "copyToDevice source");
		checkRange(memory, dstOffset, bytes, "copyToDevice");
		if (bytes == 0) {
			return;
		}
		enter();
		int result = cuMemcpyHtoDAsync(memory.at(dstOffset), Pointer.to(src).withByteOffset(src.position()), bytes, stream.handle);
		if (result != CudaErrors.SUCCESS) {
			throw streamFailure(result, "cuMemcpyHtoDAsync", stream);
		}
	}

	@Override
	public void copyToHost(NativeMemory src, long srcOffset, ByteBuffer dst, long bytes, NativeStream nativeStream) {
		CudaMemory memory = memory(src);
		CudaStream stream = stream(nativeStream);
		checkHost(dst, bytes, "copyToHost destination");
		if (dst.isReadOnly()) {
			throw new IllegalArgumentException("copyToHost destination is read-only");
		}
		checkRange(memory, srcOffset, bytes, "copyToHost");
		if (bytes == 0) {
			return;
		}
		enter();
		int result = cuMemcpyDtoHAsync(Pointer.to(dst).withByteOffset(dst.position()), memory.at(srcOffset), bytes, stream.handle);
		if (result != CudaErrors.SUCCESS) {
			throw streamFailure(result, "cuMemcpyDtoHAsync", stream);
		}
	}

	@Override
	public void copyDeviceToDevice(NativeMemory src, long srcOffset, NativeMemory dst, long dstOffset, long bytes,
			NativeStream nativeStream) {
		CudaMemory from = memory(src);
		CudaMemory to = memory(dst);
		CudaStream stream = stream(nativeStream);
		checkRange(from, srcOffset, bytes, "copyDeviceToDevice source");
		checkRange(to, dstOffset, bytes, "copyDeviceToDevice destination");
		if (bytes == 0) {
			return;
		}
		enter();
		int result = cuMemcpyDtoDAsync(to.at(dstOffset), from.at(srcOffset), bytes, stream.handle);
		if (result != CudaErrors.SUCCESS) {
			throw streamFailure(result, "cuMemcpyDtoDAsync", stream);
		}
	}

	@Override
	public void fill(NativeMemory dst, long offset, long bytes, byte value, NativeStream nativeStream) {
		CudaMemory memory = memory(dst);
		CudaStream stream = stream(nativeStream);
		checkRange(memory, offset, bytes, "fill");
		if (bytes == 0) {
			return;
		}
		enter();
		int result = cuMemsetD8Async(memory.at(offset), value, bytes, stream.handle);
		if (result != CudaErrors.SUCCESS) {
			throw streamFailure(result, "cuMemsetD8Async", stream);
		}
	}

	private static void checkRange(CudaMemory memory, long offset, long bytes, String what) {
		if (offset < 0 || bytes < 0 || offset > memory.byteSize() - bytes) {
			throw new IllegalArgumentException(what + ": " + bytes + " bytes at offset " + offset + " do not fit a buffer of "
					+ memory.byteSize() + " bytes");
		}
	}

	private static void checkHost(ByteBuffer buffer, long bytes, String what) {
		if (!buffer.isDirect()) {
			throw new IllegalArgumentException(what + " must be a direct buffer (use allocateStaging); a heap buffer can "
					+ "move while the asynchronous copy runs");
		}
		if (bytes < 0 || bytes > buffer.remaining()) {
			throw new IllegalArgumentException(what + " has " + buffer.remaining() + " bytes between position and limit, "
					+ bytes + " requested");
		}
	}

	@Override
	public ByteBuffer allocateStaging(long bytes) {
		if (bytes < 0 || bytes > Integer.MAX_VALUE) {
			throw new IllegalArgumentException("A staging buffer holds 0 to " + Integer.MAX_VALUE + " bytes, " + bytes + " requested");
		}
		enter();
		Pointer host = new Pointer();
		int result = cuMemAllocHost(host, Math.max(bytes, 1));
		if (result != CudaErrors.SUCCESS) {
			if (result == CudaErrors.OUT_OF_MEMORY) {
				throw new GpuOutOfMemoryException(bytes, "cuMemAllocHost could not allocate page-locked host memory: "
						+ CudaErrors.describe(result));
			}
			throw failure(result, "cuMemAllocHost", null, null);
		}
		ByteBuffer buffer = host.getByteBuffer(0, bytes);
		if (buffer == null) {
			cuMemFreeHost(host);
			throw new GpuException("cuMemAllocHost returned no buffer for " + bytes + " bytes");
		}
		buffer.order(ByteOrder.nativeOrder());
		this.staging.put(buffer, host);
		return buffer;
	}

	@Override
	public void freeStaging(ByteBuffer buffer) {
		Pointer host = this.staging.remove(buffer);
		if (this.closedFlag) {
			return; // every staging buffer was freed at close
		}
		if (host == null) {
			throw new IllegalArgumentException("Not a live staging buffer of the CUDA backend of device " + this.ordinal);
		}
		enter();
		int result = cuMemFreeHost(host);
		if (result != CudaErrors.SUCCESS) {
			throw failure(result, "cuMemFreeHost", null, null);
		}
	}

	@Override
	public MemoryInfo memoryInfo() {
		long used = this.usedBytes.get();
		long live = this.liveBuffers.get();
		try {
			enter();
			long[] free = new long[1];
			long[] total = new long[1];
			if (cuMemGetInfo(free, total) == CudaErrors.SUCCESS) {
				return new MemoryInfo(used, free[0], total[0], live);
			}
		}
		catch (GpuException ex) {
			// closed or unhealthy: report what this backend knows
		}
		return new MemoryInfo(used, 0, this.info.totalMemoryBytes(), live);
	}

	@Override
	public void synchronizeDevice() {
		enter();
		int result = cuCtxSynchronize();
		if (result != CudaErrors.SUCCESS) {
			throw failure(result, "cuCtxSynchronize", null, null);
		}
	}

	/**
	 * {@inheritDoc}
	 * <p>Records a marker event on the legacy default stream, which CUDA orders after all work of
	 * every blocking stream (the per-thread default streams of all threads included), and on each
	 * created (non-blocking) stream, then polls them until the deadline: no thread is started and
	 * none blocks in the driver, so a kernel that never ends cannot hang shutdown. A sticky failure
	 * counts as idle (nothing will run any more).
	 */
	@Override
	public boolean awaitIdle(long timeoutNanos) {
		enter();
		List<CUevent> markers = new ArrayList<>();
		try {
			List<CudaStream> targets = new ArrayList<>();
			targets.add(this.legacy);
			targets.addAll(this.streams);
			for (CudaStream stream : targets) {
				CUevent marker = new CUevent();
				if (cuEventCreate(marker, CUevent_flags.CU_EVENT_DISABLE_TIMING) != CudaErrors.SUCCESS) {
					return this.healthProblem != null;
				}
				markers.add(marker);
				int recorded = stream.recordForDrain(marker);
				if (recorded != CudaErrors.SUCCESS && recorded != -1) {
					return true; // the context failed: nothing will run any more
				}
			}
			long deadline = System.nanoTime() + Math.max(0, timeoutNanos);
			long pauseNanos = 20_000;
			for (int i = 0; i < markers.size();) {
				int result = cuEventQuery(markers.get(i));
				if (result != CudaErrors.NOT_READY) {
					i++; // done, or the context failed
					continue;
				}
				long left = deadline - System.nanoTime();
				if (left <= 0) {
					return false;
				}
				java.util.concurrent.locks.LockSupport.parkNanos(Math.min(left, pauseNanos));
				pauseNanos = Math.min(pauseNanos * 2, 5_000_000);
				if (Thread.interrupted()) {
					Thread.currentThread().interrupt();
					return false;
				}
				enter();
			}
			return true;
		}
		finally {
			for (CUevent marker : markers) {
				cuEventDestroy(marker);
			}
		}
	}

	/**
	 * {@inheritDoc}
	 * <p>Kernels on the device cannot be stopped, so this always answers that work may still run:
	 * close then neither synchronises the context (which would wait for them) nor frees memory they
	 * may still use; the primary context's release takes it with it.
	 */
	@Override
	public boolean abandon(GpuException reason) {
		this.abandoned = true;
		logger.warn("CUDA device {}: work still running at close is abandoned; its memory goes with the context", this.ordinal);
		return false;
	}

	/** Whether allocations use the stream-ordered allocator ({@code cuMemAllocAsync}). */
	public boolean streamOrderedAllocator() {
		return this.streamOrderedAllocator;
	}

	/** Whether the memory pool release threshold from the configuration is in effect. */
	public boolean memoryPoolReleaseThresholdApplied() {
		return this.releaseThresholdApplied;
	}

	// ---------------------------------------------------------------- close

	@Override
	public void close() {
		if (!this.closed.compareAndSet(false, true)) {
			return;
		}
		long[] current = CURRENT.get();
		if ((current[0] != this.id || current[1] != 0) && cuCtxSetCurrent(this.context) == CudaErrors.SUCCESS) {
			current[0] = this.id;
		}
		boolean running = this.abandoned;
		int result = running ? CudaErrors.SUCCESS : cuCtxSynchronize();
		if (result != CudaErrors.SUCCESS) {
			logger.warn("Closing CUDA device {}: outstanding work failed: {}", this.ordinal, CudaErrors.describe(result));
		}
		this.closedFlag = true;
		int leftStreams = this.streams.size();
		for (CudaStream stream : List.copyOf(this.streams)) {
			stream.destroyQuietly();
		}
		this.streams.clear();
		int leftEvents = this.events.size();
		for (CudaEvent event : List.copyOf(this.events)) {
			event.destroyQuietly();
		}
		this.events.clear();
		int leftBuffers = 0;
		for (CudaMemory memory : List.copyOf(this.allocations)) {
			// After an abandon kernels may still use the memory; cuMemFree would also wait for them.
			if (memory.markFreed()) {
				leftBuffers++;
				if (!running) {
					cuMemFree(memory.pointer);
				}
			}
		}
		this.allocations.clear();
		this.usedBytes.set(0);
		this.liveBuffers.set(0);
		List<Pointer> hosts;
		synchronized (this.staging) {
			hosts = new ArrayList<>(this.staging.values());
			this.staging.clear();
		}
		if (!running) {
			for (Pointer host : hosts) {
				cuMemFreeHost(host);
			}
			CUmodule module;
			while ((module = this.modules.poll()) != null) {
				cuModuleUnload(module);
			}
		}
		if (leftStreams + leftEvents + leftBuffers + hosts.size() > 0) {
			logger.warn("Closing CUDA device {}: released {} streams, {} events, {} device buffers and {} staging buffers "
					+ "that were still open", this.ordinal, leftStreams, leftEvents, leftBuffers, hosts.size());
		}
		result = cuDevicePrimaryCtxRelease(this.device);
		if (result != CudaErrors.SUCCESS) {
			logger.warn("Releasing the primary context of CUDA device {} returned {}", this.ordinal, CudaErrors.describe(result));
		}
		current[0] = 0;
		logger.debug("CUDA device {} closed", this.ordinal);
	}

	@Override
	public String toString() {
		return "CudaDeviceBackend[device " + this.ordinal + ", " + this.info.name() + ", " + this.info.uuid()
				+ (this.closedFlag ? ", closed" : "") + "]";
	}

}
