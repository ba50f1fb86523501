package dev.gpucompute.autoconfigure.web;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;

import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RestController;

import dev.gpucompute.DeviceBuffer;
import dev.gpucompute.ElementType;
import dev.gpucompute.GpuLauncher;
import dev.gpucompute.HostArray;
import dev.gpucompute.KernelSource;
import dev.gpucompute.LaunchConfig;
import dev.gpucompute.PoolExhaustedException;
import dev.gpucompute.StreamLease;
import dev.gpucompute.StreamPool;
import dev.gpucompute.StreamScope;

/**
 * Request handlers that fail the way GPU code fails, with the real runtime (CPU backend): the pool
 * exhausted, a group of streams larger than the pool (with {@code gpu.streams.max-size=1}), device
 * memory exhausted, a kernel that fails while it runs (seen through the README's
 * {@code .join()}), and failures wrapped by futures. Shared by the Spring MVC and WebFlux tests.
 */
@RestController
class FailingController {

	static final KernelSource OUT_OF_BOUNDS = KernelSource.named("out_of_bounds")
		.params(dev.gpucompute.ParamType.INT, dev.gpucompute.ParamType.BUFFER)
		.cpu((block, args) -> {
			int n = args.i32(0);
			java.nio.FloatBuffer data = args.floats(1);
			for (long i = block.firstIndex(); i < block.endIndex(n); i++) {
				data.put((int) i, 1);
			}
		});

	private final GpuLauncher launcher;

	private final StreamPool pool;

	FailingController(GpuLauncher launcher, StreamPool pool) {
		this.launcher = launcher;
		this.pool = pool;
	}

	/** Waits for no stream: fails at once while the test holds every stream. */
	@GetMapping("/lease")
	String lease() {
		try (StreamLease lease = this.pool.acquire(Duration.ZERO)) {
			return lease.stream().name();
		}
	}

	/** Two streams at once from a pool of at most one: a group the pool can never lease. */
	@GetMapping("/group")
	String group() {
		try (var leases = this.pool.acquireAll(2)) {
			return "leased " + leases.size();
		}
	}

	/** A stream-parallel group of two branches, which needs two pooled streams at once. */
	@GetMapping("/parallel")
	String parallel() {
		this.launcher.parallel(() -> {
		}, () -> {
		});
		return "ran";
	}

	@GetMapping("/allocate")
	String allocate() {
		try (DeviceBuffer buffer = this.launcher.allocate(Long.MAX_VALUE / 2, ElementType.BYTE)) {
			return "allocated";
		}
	}

	/** Writes 100 floats into a buffer of 10: the kernel fails on the device, reported at the join. */
	@GetMapping("/kernel")
	String kernel() {
		float[] out = new float[10];
		try (StreamLease lease = this.pool.acquire();
				StreamScope scope = this.launcher.useStream(lease.stream());
				DeviceBuffer data = this.launcher.allocate(4L * out.length, ElementType.BYTE)) {
			this.launcher.launch(this.launcher.load(OUT_OF_BOUNDS), LaunchConfig.linear(100, 32), 100, data);
			data.download(HostArray.of(out), lease.stream()).join();
		}
		return "done";
	}

	@GetMapping("/future-get")
	String futureGet() throws Exception {
		return CompletableFuture.<String>failedFuture(new PoolExhaustedException(Duration.ofMillis(5), 2, 2, 1)).get();
	}

	@GetMapping("/not-gpu")
	String notGpu() {
		throw new CompletionException(new IllegalStateException("a failure that is not the GPU's"));
	}

}
