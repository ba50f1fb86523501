package dev.gpucompute.internal.context;

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

import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuContextBuilder;
import dev.gpucompute.GpuDevices;
import dev.gpucompute.GpuException;
import dev.gpucompute.batch.GpuBatcher;
import dev.gpucompute.internal.batch.Batcher;

/** The implementation of {@link GpuDevices}. */
public final class DevicesImpl implements GpuDevices {

	private static final Logger log = LoggerFactory.getLogger(GpuDevices.class);

	private final List<GpuContext> contexts;

	private final Map<Integer, GpuContext> byOrdinal = new TreeMap<>();

	/** Rendezvous-hashing seeds, one per context, from the device's identity (UUID) and ordinal. */
	private final long[] seeds;

	/** Where the search for the least loaded device starts, so that ties spread over the devices. */
	private final AtomicInteger nextStart = new AtomicInteger();

	private DevicesImpl(List<GpuContext> contexts) {
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
			((ContextImpl) context).joinGroup(this);
		}
	}

	/** Opens one context per ordinal (what {@link dev.gpucompute.GpuDevices#open} does); those opened are closed when one fails. */
	static GpuDevices openEach(IntFunction<GpuContextBuilder.Settings> settingsFor, Collection<Integer> ordinals) {
		List<Integer> checked = checkOrdinals(ordinals);
		List<GpuContext> opened = new ArrayList<>(checked.size());
		try {
			for (int ordinal : checked) {
				opened.add(ContextAssembly.open(settingsFor.apply(ordinal), ordinal));
			}
			DevicesImpl devices = new DevicesImpl(opened);
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

	@Override
	public List<GpuContext> contexts() {
		return this.contexts;
	}

	@Override
	public GpuContext primary() {
		return this.contexts.get(0);
	}

	@Override
	public Set<Integer> ordinals() {
		return this.byOrdinal.keySet();
	}

	/**
	 * The context of device {@code ordinal}.
	 * @throws IllegalArgumentException when that device is not one of these
	 */
	@Override
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
	@Override
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
	@Override
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

	@Override
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
			batchers.addAll(((ContextImpl) context).batchers());
			longest = (context.drainTimeout().compareTo(longest) > 0) ? context.drainTimeout() : longest;
		}
		try {
			Batcher.closeAll(batchers, longest);
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
