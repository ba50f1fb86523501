package dev.gpucompute.internal.context;

import java.time.Duration;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import dev.gpucompute.Backend;
import dev.gpucompute.BackendUnavailableException;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuContextBuilder;
import dev.gpucompute.KernelSource;
import dev.gpucompute.StreamPriority;
import dev.gpucompute.internal.core.Captures;
import dev.gpucompute.internal.core.CompletionFuture;
import dev.gpucompute.internal.core.ContextCompletions;
import dev.gpucompute.internal.core.ContextState;
import dev.gpucompute.internal.core.ContextThreads;
import dev.gpucompute.internal.core.LeakRegistry;
import dev.gpucompute.internal.launch.KernelRegistry;
import dev.gpucompute.internal.graph.Graphs;
import dev.gpucompute.internal.launch.Launcher;
import dev.gpucompute.internal.memory.CopyFaults;
import dev.gpucompute.internal.memory.Memory;
import dev.gpucompute.internal.pool.Pool;
import dev.gpucompute.internal.stream.Events;
import dev.gpucompute.internal.stream.Streams;
import dev.gpucompute.listener.KernelLoad;
import dev.gpucompute.settings.CopySettings;
import dev.gpucompute.settings.CpuSettings;
import dev.gpucompute.settings.KernelSettings;
import dev.gpucompute.settings.KernelTiming;
import dev.gpucompute.settings.MetricsSettings;
import dev.gpucompute.settings.StreamSettings;
import dev.gpucompute.spi.Availability;
import dev.gpucompute.spi.BackendConfig;
import dev.gpucompute.spi.BackendProvider;
import dev.gpucompute.spi.BackendSelection;
import dev.gpucompute.spi.Backends;
import dev.gpucompute.spi.DeviceBackend;

/**
 * Builds a context: chooses and opens its backend, builds its rooms in order, each given the
 * collaborators it uses through its constructor (the lifecycle, completions, events, streams, memory,
 * pool, launcher), schedules their housekeeping, and hands them to the {@link ContextImpl} facade;
 * then fills the pool and loads the kernels named in the settings. Nothing is wired after it was made:
 * the backend reports kernel failures to the {@link KernelRegistry} the launcher is built with, and
 * the lifecycle is made with its owner, the facade. A context that fails to open releases what it
 * had (threads, streams, the device) before the failure is thrown.
 */
public final class ContextAssembly {

	private static final Logger log = LoggerFactory.getLogger(GpuContext.class);

	private static final AtomicInteger IDS = new AtomicInteger();

	/** How often the device time of timed launches is read (the delay before it reaches listeners). */
	private static final long TIMING_READ_MILLIS = 20;

	/**
	 * What a context is built with besides its settings.
	 *
	 * @param provider the backend to open, or {@code null} to choose it by the settings
	 * ({@code Backends.select})
	 * @param waitSpinNanos how long a thread waiting for a copy's future spins for its completion before
	 * it blocks; -1 for the backend's default (100 µs on CUDA, where a core is free to watch the device,
	 * none on the CPU backend, whose work runs on the host's cores)
	 * @param copyFaults called before each step of each copy ({@link CopyFaults#NONE}: nothing)
	 */
	public record Options(@Nullable BackendProvider provider, long waitSpinNanos, CopyFaults copyFaults) {

		/** The backend chosen by the settings, its default spin, no copy faults. */
		public static final Options DEFAULTS = new Options(null, -1, CopyFaults.NONE);

	}

	private final GpuContextBuilder.Settings settings;

	private final DeviceBackend backend;

	private final KernelRegistry kernels;

	private final Options options;

	private final int id = IDS.incrementAndGet();

	private ContextAssembly(GpuContextBuilder.Settings settings, DeviceBackend backend, KernelRegistry kernels,
			Options options) {
		this.settings = settings;
		this.backend = backend;
		this.kernels = kernels;
		this.options = options;
	}

	/** Opens a context on device {@code device} with {@code settings}, the backend chosen by them. */
	public static GpuContext open(GpuContextBuilder.Settings settings, int device) {
		return open(settings, device, Options.DEFAULTS);
	}

	/**
	 * Opens a context on device {@code device} with {@code settings} and {@code options}.
	 * @throws BackendUnavailableException when the backend cannot run here
	 * @throws IllegalArgumentException when the staging budget cannot hold the staging block of a chunk
	 */
	public static ContextImpl open(GpuContextBuilder.Settings settings, int device, Options options) {
		Memory.checkStagingBudget(settings.copies());
		CpuSettings cpu = settings.cpu();
		BackendProvider provider;
		String reason;
		boolean warning;
		if (options.provider() == null) {
			BackendSelection selection = Backends.select(settings.backend(), device, cpu.devices());
			if (selection.provider() == null || !selection.availability().available()) {
				throw new BackendUnavailableException(selection.backend(), selection.availability().reason(), null);
			}
			provider = selection.provider();
			reason = selection.reason();
			warning = selection.warning();
		}
		else {
			provider = options.provider();
			Availability availability = provider.probe(device);
			if (!availability.available()) {
				throw new BackendUnavailableException(provider.backend(), availability.reason(), null);
			}
			reason = provider.backend() + " provider given to open with";
			warning = false;
		}
		KernelRegistry kernels = new KernelRegistry(settings.listener());
		long budget = (cpu.memoryBudget() > 0) ? cpu.memoryBudget()
				: Math.max(1, provider.defaultMemoryBudget() / cpu.devices());
		KernelSettings kernelSettings = settings.kernelSettings();
		BackendConfig config = new BackendConfig(device, cpu.threads(), budget,
				settings.cuda().memoryPoolReleaseThreshold(), kernelSettings.compileOptions(), kernelSettings.cacheDir(),
				kernels);
		DeviceBackend opened = provider.open(config);
		ContextImpl context = null;
		try {
			context = new ContextImpl(new ContextAssembly(settings, opened, kernels, options), reason);
			context.start(settings.kernels());
		}
		catch (RuntimeException | Error ex) {
			// Nothing of a context that failed to open may outlive it: its threads, streams, the device.
			try {
				if (context != null) {
					context.close();
				}
				else {
					opened.close();
				}
			}
			catch (RuntimeException | Error closing) {
				ex.addSuppressed(closing);
			}
			throw ex;
		}
		LeakRegistry.opened(context, context::workInFlight);
		if (warning) {
			log.warn("GPU backend {}: {}, device {}; {}", provider.backend(), opened.info().name(), device, reason);
		}
		else {
			log.info("GPU backend {}: {}, device {}; {}", provider.backend(), opened.info().name(), device, reason);
		}
		return context;
	}

	/** The context's number in this JVM: names its threads and appears in messages. */
	int id() {
		return this.id;
	}

	DeviceBackend backend() {
		return this.backend;
	}

	/** The settings the context opens with. */
	GpuContextBuilder.Settings settings() {
		return this.settings;
	}

	/**
	 * Builds the rooms around {@code lifecycle} (made by the facade, its owner), in the order each
	 * needs the others, and starts their housekeeping.
	 */
	Rooms build(ContextState lifecycle) {
		DeviceBackend backend = this.backend;
		String prefix = "gpu-" + this.id + "-";
		ScheduledThreadPoolExecutor housekeeping = new ScheduledThreadPoolExecutor(1,
				ContextThreads.daemon(prefix + "housekeeping"));
		housekeeping.setRemoveOnCancelPolicy(true);
		StreamSettings poolSettings = this.settings.streams();
		Duration leakThreshold = poolSettings.leakDetectionThreshold();
		boolean recordLeakSites = leakThreshold.compareTo(Duration.ZERO) > 0;
		long spin = (this.options.waitSpinNanos() >= 0) ? this.options.waitSpinNanos()
				: (backend.info().backend() == Backend.CUDA) ? TimeUnit.MICROSECONDS.toNanos(100) : 0;
		ContextCompletions completions = new ContextCompletions(this.id, prefix + "completion", spin,
				new CompletionFuture.Waits() {

					@Override
					public void started() {
						backend.completionWaitStarted();
					}

					@Override
					public void ended() {
						backend.completionWaitEnded();
					}

					@Override
					public void check() {
						Captures captures = lifecycle.captures();
						if (captures.any()) {
							captures.checkHostWait(null, "Waiting for a future of stream work (a copy's, completion())");
						}
					}

				});
		Events events = new Events(backend, lifecycle, recordLeakSites);
		Streams streams = new Streams(lifecycle, completions, events, backend, poolSettings.defaultStream());
		CopySettings copies = this.settings.copies();
		Memory memory = new Memory(lifecycle, backend, streams, events, completions, copies.stagingCache(),
				copies.chunkSize(), copies.threads(), prefix + "copy-", copies.stagingBudget(), copies.stagingTimeout(),
				recordLeakSites, this.options.copyFaults());
		int[] priorityLimits = new int[StreamPriority.values().length];
		for (StreamPriority priority : StreamPriority.values()) {
			priorityLimits[priority.ordinal()] = this.settings.priorityLimit(priority);
		}
		Pool pool = new Pool(lifecycle, backend, streams, this.settings.listener(), housekeeping,
				poolSettings.initialSize(), poolSettings.maxSize(), poolSettings.acquireTimeout(), leakThreshold,
				priorityLimits);
		MetricsSettings metrics = this.settings.metrics();
		Launcher launcher = new Launcher(lifecycle, backend, this.settings.listener(), metrics.kernelTiming(), streams,
				events, memory, pool, completions, this.settings.kernelSettings().loadWaitThreshold(), this.kernels);
		Graphs graphs = new Graphs(lifecycle, backend, streams, completions, this.settings.listener(), recordLeakSites);
		if (metrics.kernelTiming() != KernelTiming.OFF) {
			housekeeping.scheduleWithFixedDelay(() -> launcher.drainTimings(false), TIMING_READ_MILLIS, TIMING_READ_MILLIS,
					TimeUnit.MILLISECONDS);
		}
		long period = metrics.utilizationSamplePeriod().toNanos();
		if (period > 0) {
			double alpha = 1 - Math.exp(-(double) period / metrics.utilizationWindow().toNanos());
			housekeeping.scheduleAtFixedRate(() -> pool.sampleBusy(alpha), period, period, TimeUnit.NANOSECONDS);
		}
		return new Rooms(lifecycle, backend, housekeeping, completions, events, streams, memory, pool, launcher, graphs);
	}

	/**
	 * The rooms of one context, built by {@link #build}: what the facade is made of.
	 *
	 * @param lifecycle identity and lifecycle, which every handle checks
	 * @param backend the open device
	 * @param housekeeping the context's timer thread (timings, utilisation, leak reports, batch deadlines)
	 * @param completions the futures of stream work
	 * @param events the event registry
	 * @param streams default streams and each thread's current stream
	 * @param memory device and host memory and the copies between them
	 * @param pool the stream pool
	 * @param launcher kernels and launches
	 * @param graphs graph captures and the graphs made of them
	 */
	record Rooms(ContextState lifecycle, DeviceBackend backend, ScheduledThreadPoolExecutor housekeeping,
			ContextCompletions completions, Events events, Streams streams, Memory memory, Pool pool, Launcher launcher,
			Graphs graphs) {
	}

	/** The kernels of {@code sources} loaded, each as named at open. */
	static void loadAtOpen(Launcher launcher, Iterable<KernelSource> sources) {
		for (KernelSource source : sources) {
			launcher.load(source, KernelLoad.Trigger.OPEN);
		}
	}

}
