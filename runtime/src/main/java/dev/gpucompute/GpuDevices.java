package dev.gpucompute;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.function.IntFunction;
import org.jspecify.annotations.Nullable;

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
public interface GpuDevices extends AutoCloseable {

	/**
	 * Opens one context per ordinal, each with the settings of {@code template} (its device setting
	 * is replaced). Opened in the order given; the first is {@link #primary()}.
	 * @throws IllegalArgumentException when the list is empty, has duplicates or negative ordinals
	 * @throws BackendUnavailableException when a device cannot be opened (those opened are closed)
	 */
	static GpuDevices open(GpuContextBuilder template, Collection<Integer> ordinals) {
		Objects.requireNonNull(template, "template");
		GpuContextBuilder.Settings settings = template.settings();
		return GpuContextBuilder.openDevices((ordinal) -> settings, ordinals);
	}

	/**
	 * Opens one context per ordinal with the builder {@code builderFor} returns for it (a listener per
	 * device, say); its device setting is replaced by the ordinal.
	 * @throws IllegalArgumentException when the list is empty, has duplicates or negative ordinals
	 * @throws BackendUnavailableException when a device cannot be opened (those opened are closed)
	 */
	static GpuDevices open(IntFunction<GpuContextBuilder> builderFor, Collection<Integer> ordinals) {
		Objects.requireNonNull(builderFor, "builderFor");
		return GpuContextBuilder.openDevices(
				(ordinal) -> Objects.requireNonNull(builderFor.apply(ordinal), "builder for device " + ordinal).settings(),
				ordinals);
	}

	/**
	 * Opens every device of the backend {@code template} chooses: every CUDA device of this machine, or
	 * the {@link GpuContextBuilder#cpuDevices(int) CPU devices} the CPU backend stands in for.
	 */
	static GpuDevices openAll(GpuContextBuilder template) {
		Objects.requireNonNull(template, "template");
		GpuContextBuilder.Settings settings = template.settings();
		List<Integer> ordinals = new ArrayList<>();
		for (int i = 0; i < deviceCount(settings.backend(), settings.cpu().devices()); i++) {
			ordinals.add(i);
		}
		return open(template, ordinals);
	}

	/**
	 * How many devices {@code backend} has here ({@code null}: what {@code auto} chooses): CUDA devices,
	 * or {@code cpuDevices} for the CPU backend. Zero when CUDA was asked for and is unavailable.
	 */
	static int deviceCount(@Nullable Backend backend, int cpuDevices) {
		return GpuContextBuilder.deviceCount(backend, cpuDevices);
	}

	/** Every device's context, in the order opened; the first is the primary. */
	List<GpuContext> contexts();

	/** The first device: the one single-device code (and the single-device Spring beans) use. */
	GpuContext primary();

	/** The ordinals of the devices, ascending. */
	Set<Integer> ordinals();

	/**
	 * The context of device {@code ordinal}.
	 * @throws IllegalArgumentException when that device is not one of these
	 */
	GpuContext get(int ordinal);

	/**
	 * The healthy device with the least {@linkplain GpuContext#load() load} now: leased streams, threads
	 * waiting for a lease and pending work. Ties go round the devices.
	 * @throws GpuException when no device is healthy
	 */
	GpuContext leastLoaded();

	/**
	 * The healthy device {@code key} belongs to, by rendezvous (highest random weight) hashing of the
	 * key's {@code hashCode()} with each device's identity: the same key lands on the same device for
	 * as long as that device is healthy (also across restarts, for keys with a stable hash code such
	 * as strings), and a device going down moves only its own keys, spread over the others.
	 * @throws GpuException when no device is healthy
	 */
	GpuContext forKey(Object key);

	/** Number of devices. */
	int size();

	/**
	 * Closes every device: first closes every device's batchers (their queued items run within the
	 * longest drain timeout, in parallel), then stops new leases on all of them, so that their work
	 * drains in parallel, then closes each (each within its drain timeout). Idempotent.
	 */
	void close();


}
