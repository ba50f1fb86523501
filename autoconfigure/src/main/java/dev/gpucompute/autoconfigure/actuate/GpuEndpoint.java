package dev.gpucompute.autoconfigure.actuate;

import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;

import org.springframework.boot.actuate.endpoint.Access;
import org.springframework.boot.actuate.endpoint.annotation.Endpoint;
import org.springframework.boot.actuate.endpoint.annotation.ReadOperation;
import org.springframework.boot.actuate.endpoint.annotation.Selector;

import dev.gpucompute.Backend;
import dev.gpucompute.ContextClosedException;
import dev.gpucompute.DefaultStreamMode;
import dev.gpucompute.DeviceInfo;
import dev.gpucompute.EventRegistry.EventStats;
import dev.gpucompute.GpuContext;
import dev.gpucompute.Kernel;
import dev.gpucompute.Kernel.KernelStats;
import dev.gpucompute.KernelTiming;
import dev.gpucompute.MemoryInfo;
import dev.gpucompute.PoolStats;

/**
 * The {@code gpu} Actuator endpoint ({@code /actuator/gpu}): what the GPU context is and does now.
 * {@code /actuator/gpu/{part}} returns one part: {@code backend}, {@code device}, {@code streams},
 * {@code events}, {@code kernels} or {@code memory}. Read-only: it takes snapshots and changes
 * nothing. Thread-safe.
 */
@Endpoint(id = "gpu", defaultAccess = Access.READ_ONLY)
public class GpuEndpoint {

	private final GpuContext context;

	/**
	 * An endpoint reporting on {@code context}.
	 * @param context the context to report on; not closed by the endpoint
	 */
	public GpuEndpoint(GpuContext context) {
		this.context = context;
	}

	/** Everything: backend, device, stream pool, events, kernels, memory. */
	@ReadOperation
	public GpuDescriptor gpu() {
		return new GpuDescriptor(backend(), this.context.device(), this.context.streams().stats(),
				this.context.events().stats(), kernels(), memory());
	}

	/**
	 * One part of {@link #gpu()}.
	 * @param part {@code backend}, {@code device}, {@code streams}, {@code events}, {@code kernels}
	 * or {@code memory}
	 * @return the part, or {@code null} (HTTP 404) for an unknown part, or for {@code memory} once
	 * the context is closed
	 */
	@ReadOperation
	public Object part(@Selector String part) {
		return switch (part.toLowerCase(Locale.ROOT)) {
			case "backend" -> backend();
			case "device" -> this.context.device();
			case "streams" -> this.context.streams().stats();
			case "events" -> this.context.events().stats();
			case "kernels" -> kernels();
			case "memory" -> memory();
			default -> null;
		};
	}

	private BackendDescriptor backend() {
		String problem = this.context.healthProblem();
		return new BackendDescriptor(this.context.backend(), this.context.backendReason(), problem == null, problem,
				this.context.kernelTiming(), this.context.defaultStreamMode());
	}

	private Map<String, KernelDescriptor> kernels() {
		Map<String, KernelDescriptor> kernels = new TreeMap<>();
		for (Kernel kernel : this.context.launcher().kernels()) {
			KernelStats stats = kernel.stats();
			kernels.put(kernel.name(), new KernelDescriptor(stats.launches(), stats.errors(), stats.timedLaunches(),
					stats.deviceTime().toNanos(), stats.meanDeviceTime().toNanos()));
		}
		return kernels;
	}

	private MemoryInfo memory() {
		try {
			return this.context.memory();
		}
		catch (ContextClosedException ex) {
			return null;
		}
	}

	/**
	 * The whole report.
	 *
	 * @param backend the backend and the context's state
	 * @param device the device
	 * @param streams the stream pool, with each pooled stream's busy share
	 * @param events the event registry
	 * @param kernels loaded kernels by name
	 * @param memory device memory, {@code null} once the context is closed
	 */
	public record GpuDescriptor(BackendDescriptor backend, DeviceInfo device, PoolStats streams, EventStats events,
			Map<String, KernelDescriptor> kernels, MemoryInfo memory) {
	}

	/**
	 * The backend and the context's state.
	 *
	 * @param backend the backend in use
	 * @param reason why it was chosen
	 * @param healthy whether the context is open and has not hit a sticky error
	 * @param problem why it is unhealthy, {@code null} when healthy
	 * @param kernelTiming how launches are timed ({@code gpu.metrics.kernel-timing})
	 * @param defaultStream the default-stream mode
	 */
	public record BackendDescriptor(Backend backend, String reason, boolean healthy, String problem,
			KernelTiming kernelTiming, DefaultStreamMode defaultStream) {
	}

	/**
	 * Launch figures of one kernel.
	 *
	 * @param launches launches enqueued
	 * @param errors launches rejected by the backend plus kernels that failed while running
	 * @param timedLaunches launches whose device time was measured
	 * @param deviceTimeNanos total device time of the timed launches, in nanoseconds
	 * @param meanDeviceTimeNanos mean device time of a timed launch, in nanoseconds
	 */
	public record KernelDescriptor(long launches, long errors, long timedLaunches, long deviceTimeNanos,
			long meanDeviceTimeNanos) {
	}

}
