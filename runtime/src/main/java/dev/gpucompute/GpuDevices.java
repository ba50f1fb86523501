package dev.gpucompute;

import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.IntFunction;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import dev.gpucompute.spi.BackendProvider;
import dev.gpucompute.spi.BackendSelection;
import dev.gpucompute.spi.Backends;

/**
 * Several devices in one application: one {@link GpuContext} per device, each with its own stream
 * pool, events, kernels and memory, and the choice of device for a piece of work:
 * {@link #leastLoaded()} for work that may run anywhere, {@link #forKey(Object)} for work that
 * should keep landing on the same device (a collection, a tenant), by rendezvous hashing, so that
 * losing a device moves only the keys that were on it.
 *
 * <p>Contexts of one {@code GpuDevices} may use each other's handles where that makes sense across
 * devices: a stream of one device waits for an event or a stream of another
 * ({@link GpuStream#waitFor(GpuEvent)}, {@link GpuStream#waitFor(GpuStream)}), and a buffer copies
 * from a buffer of another device ({@link DeviceBuffer#copyFrom}: a peer copy on CUDA, direct where
 * the devices have peer access, staged through the host by the driver where not). Every other use
 * of another device's handle is rejected with {@link ContextMismatchException}.
 *
 * <p>Open with {@link #open(GpuContextBuilder, Collection)} or {@link #openAll(GpuContextBuilder)}; in
 * Spring it is a bean ({@code gpu.devices}). Thread-safe. It owns its contexts: {@link #close()}
 * closes them all (idempotent); close none of them on its own.
 */
public final class GpuDevices implements AutoCloseable {

	private static final Logger log = LoggerFactory.getLogger(GpuDevices.class);

	private final List<GpuContext> contexts;

	private final Map<Integer, GpuContext> byOrdinal = new TreeMap<>();

	/** Rendezvous-hashing seeds, one per context, from the device's identity (UUID) and ordinal. */
	private final long[] seeds;

	/** Where the search for the least loaded device starts, so that ties spread over the devices. */
	private final AtomicInteger nextStart = new AtomicInteger();

	private GpuDevices(List<GpuContext> contexts) {
		this.contexts = List.copyOf(contexts);
		this.seeds = new long[this.contexts.size()];
		for (int i = 0; i < this.contexts.size(); i++) {
			GpuContext context = this.contexts.get(i);
			if (this.byOrdinal.putIfAbsent(context.device().ordinal(), context) != null) {
				throw new IllegalArgumentException("Device " + context.device().ordinal() + " appears twice");
			}
			this.seeds[i] = mix(context.device().uuid().hashCode() * 0x9E3779B97F4A7C15L + context.device().ordinal());
		}
		for (GpuContext context : this.contexts) {
			context.joinGroup(this);
		}
	}

	/**
	 * Opens one context per ordinal, each with the settings of {@code template} (its device setting
	 * is replaced). Opened in the order given; the first is {@link #primary()}.
	 * @throws IllegalArgumentException when the list is empty, has duplicates or negative ordinals
	 * @throws BackendUnavailableException when a device cannot be opened (those opened are closed)
	 */
	public static GpuDevices open(GpuContextBuilder template, Collection<Integer> ordinals) {
		Objects.requireNonNull(template, "template");
		ContextSettings settings = template.settings();
		return openEach((ordinal) -> settings.withDevice(ordinal), ordinals);
	}

	/**
	 * Opens one context per ordinal with the builder {@code builderFor} returns for it (a listener per
	 * device, say); its device setting is replaced by the ordinal.
	 * @throws IllegalArgumentException when the list is empty, has duplicates or negative ordinals
	 * @throws BackendUnavailableException when a device cannot be opened (those opened are closed)
	 */
	public static GpuDevices open(IntFunction<GpuContextBuilder> builderFor, Collection<Integer> ordinals) {
		Objects.requireNonNull(builderFor, "builderFor");
		return openEach((ordinal) -> Objects.requireNonNull(builderFor.apply(ordinal), "builder for device " + ordinal)
			.settings()
			.withDevice(ordinal), ordinals);
	}

	private static GpuDevices openEach(IntFunction<ContextSettings> settingsFor, Collection<Integer> ordinals) {
		List<Integer> checked = checkOrdinals(ordinals);
		List<GpuContext> opened = new ArrayList<>(checked.size());
		try {
			for (int ordinal : checked) {
				opened.add(GpuContext.open(settingsFor.apply(ordinal)));
			}
			GpuDevices devices = new GpuDevices(opened);
			log.info("GPU devices: {}", devices.describe());
			return devices;
		}
		catch (RuntimeException | Error ex) {
			for (GpuContext context : opened) {
				try {
					context.close();
				}
				catch (RuntimeException closing) {
					ex.addSuppressed(closing);
				}
			}
			throw ex;
		}
	}

	/**
	 * Opens every device of the backend {@code template} chooses: every CUDA device of this machine, or
	 * the {@link GpuContextBuilder#cpuDevices(int) CPU devices} the CPU backend stands in for.
	 */
	public static GpuDevices openAll(GpuContextBuilder template) {
		Objects.requireNonNull(template, "template");
		ContextSettings settings = template.settings();
		List<Integer> ordinals = new ArrayList<>();
		for (int i = 0; i < deviceCount(settings.backend(), settings.cpuDevices()); i++) {
			ordinals.add(i);
		}
		return open(template, ordinals);
	}

	/**
	 * How many devices {@code backend} has here ({@code null}: what {@code auto} chooses): CUDA devices,
	 * or {@code cpuDevices} for the CPU backend. Zero when CUDA was asked for and is unavailable.
	 */
	public static int deviceCount(Backend backend, int cpuDevices) {
		BackendSelection selection = Backends.select(backend, 0, cpuDevices);
		if (selection.backend() == Backend.CPU) {
			return cpuDevices;
		}
		BackendProvider cuda = Backends.provider(Backend.CUDA);
		return (cuda != null && selection.availability().available()) ? cuda.deviceCount() : 0;
	}

	private static List<Integer> checkOrdinals(Collection<Integer> ordinals) {
		Objects.requireNonNull(ordinals, "ordinals");
		if (ordinals.isEmpty()) {
			throw new IllegalArgumentException("At least one device ordinal is needed");
		}
		Set<Integer> seen = new LinkedHashSet<>();
		for (Integer ordinal : ordinals) {
			Objects.requireNonNull(ordinal, "device ordinal");
			if (ordinal < 0) {
				throw new IllegalArgumentException("Device ordinals must not be negative, got " + ordinal);
			}
			if (!seen.add(ordinal)) {
				throw new IllegalArgumentException("Device " + ordinal + " is listed twice in " + ordinals);
			}
		}
		return List.copyOf(seen);
	}

	/** Every device's context, in the order opened; the first is the primary. */
	public List<GpuContext> contexts() {
		return this.contexts;
	}

	/** The first device: the one single-device code (and the single-device Spring beans) use. */
	public GpuContext primary() {
		return this.contexts.get(0);
	}

	/** The ordinals of the devices, ascending. */
	public Set<Integer> ordinals() {
		return this.byOrdinal.keySet();
	}

	/**
	 * The context of device {@code ordinal}.
	 * @throws IllegalArgumentException when that device is not one of these
	 */
	public GpuContext get(int ordinal) {
		GpuContext context = this.byOrdinal.get(ordinal);
		if (context == null) {
			throw new IllegalArgumentException("Device " + ordinal + " is not open here; the devices are "
					+ this.byOrdinal.keySet());
		}
		return context;
	}

	/**
	 * The healthy device with the least {@linkplain GpuContext#load() load} now: leased streams, threads
	 * waiting for a lease and pending work. Ties go round the devices.
	 * @throws GpuException when no device is healthy
	 */
	public GpuContext leastLoaded() {
		int n = this.contexts.size();
		int start = Math.floorMod(this.nextStart.getAndIncrement(), n);
		GpuContext best = null;
		long bestLoad = Long.MAX_VALUE;
		for (int i = 0; i < n; i++) {
			GpuContext context = this.contexts.get((start + i) % n);
			if (!context.isHealthy()) {
				continue;
			}
			long load = context.load().total();
			if (load < bestLoad) {
				best = context;
				bestLoad = load;
			}
		}
		if (best == null) {
			throw noHealthyDevice();
		}
		return best;
	}

	/**
	 * The healthy device {@code key} belongs to, by rendezvous (highest random weight) hashing of the
	 * key's {@code hashCode()} with each device's identity: the same key lands on the same device for
	 * as long as that device is healthy (also across restarts, for keys with a stable hash code such
	 * as strings), and a device going down moves only its own keys, spread over the others.
	 * @throws GpuException when no device is healthy
	 */
	public GpuContext forKey(Object key) {
		Objects.requireNonNull(key, "key");
		long hash = mix(key.hashCode() + 0x632BE59BD9B4E019L);
		GpuContext best = null;
		long bestScore = 0;
		for (int i = 0; i < this.contexts.size(); i++) {
			GpuContext context = this.contexts.get(i);
			if (!context.isHealthy()) {
				continue;
			}
			long score = mix(hash ^ this.seeds[i]);
			if (best == null || Long.compareUnsigned(score, bestScore) > 0) {
				best = context;
				bestScore = score;
			}
		}
		if (best == null) {
			throw noHealthyDevice();
		}
		return best;
	}

	private GpuException noHealthyDevice() {
		StringBuilder problems = new StringBuilder();
		for (GpuContext context : this.contexts) {
			problems.append("; device ").append(context.device().ordinal()).append(": ").append(context.healthProblem());
		}
		return new GpuException("No healthy GPU device" + problems);
	}

	/** SplitMix64's finaliser: a cheap, well-mixed 64-bit hash. */
	private static long mix(long z) {
		z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
		z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
		return z ^ (z >>> 31);
	}

	/** Number of devices. */
	public int size() {
		return this.contexts.size();
	}

	/**
	 * Closes every device: first closes every device's batchers (their queued items run within the
	 * longest drain timeout, in parallel), then stops new leases on all of them, so that their work
	 * drains in parallel, then closes each (each within its drain timeout). Idempotent.
	 */
	@Override
	public void close() {
		List<GpuBatcher<?, ?>> batchers = new ArrayList<>();
		java.time.Duration longest = java.time.Duration.ZERO;
		for (GpuContext context : this.contexts) {
			batchers.addAll(context.batchers());
			longest = (context.drainTimeout().compareTo(longest) > 0) ? context.drainTimeout() : longest;
		}
		try {
			GpuBatcher.closeAll(batchers, longest);
		}
		catch (RuntimeException ex) {
			log.warn("Closing the batchers failed", ex);
		}
		for (GpuContext context : this.contexts) {
			try {
				context.drain(java.time.Duration.ZERO);
			}
			catch (RuntimeException ex) {
				log.warn("Stopping device {} failed", context.device().ordinal(), ex);
			}
		}
		RuntimeException first = null;
		for (GpuContext context : this.contexts) {
			try {
				context.close();
			}
			catch (RuntimeException ex) {
				if (first == null) {
					first = ex;
				}
				else {
					first.addSuppressed(ex);
				}
			}
		}
		if (first != null) {
			throw first;
		}
	}

	private String describe() {
		StringBuilder text = new StringBuilder();
		for (GpuContext context : this.contexts) {
			if (text.length() > 0) {
				text.append(", ");
			}
			text.append(context.device().ordinal()).append(" = ").append(context.device().name()).append(" (")
				.append(context.device().uuid()).append(')');
		}
		return text.toString();
	}

	@Override
	public String toString() {
		return "GpuDevices[" + describe() + "]";
	}

}
