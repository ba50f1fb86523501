package dev.gpucompute.benchmarks;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.UUID;
import java.util.stream.Stream;

import dev.gpucompute.Backend;
import dev.gpucompute.KernelSource;
import dev.gpucompute.spi.BackendConfig;
import dev.gpucompute.spi.Backends;
import dev.gpucompute.spi.DeviceBackend;
import dev.gpucompute.spi.KernelCompilation;
import org.jspecify.annotations.Nullable;

/**
 * How long a CUDA C kernel takes to load by each route the runtime has, for the {@code .cu}
 * files of a directory (the sample app's, with the fatbins {@code -Pcuda-aot} built beside them):
 * the prebuilt fatbin, compiling the source with what this machine has (NVRTC through JNA first),
 * and the disk cache a second process would hit. One load each, after one warm-up load of another
 * kernel per backend (so that loading NVRTC and the driver's first-module costs are not counted).
 * Not a JMH benchmark: a first load is a one-time cost, which is what a service pays at start-up.
 * Then {@link BusyDeviceLoads}: the same loads with the device idle and while a 1 s kernel runs on
 * another stream, by {@code cuModuleLoadDataEx} (what the runtime uses) and by CUDA 12's
 * {@code cuLibraryLoadData} (through JNA: JCuda 12.6.0 does not bind it), saying whether each waited.
 *
 * <pre>java -cp ... dev.gpucompute.benchmarks.KernelLoadTimes sample-app/target/classes/gpu/kernels</pre>
 */
public final class KernelLoadTimes {

	private static final String WARM_UP = "extern \"C\" __global__ void warm_up(int* x) { x[0] = 1; }";

	private KernelLoadTimes() {
	}

	public static void main(String[] args) throws IOException {
		Path dir = Path.of((args.length > 0) ? args[0] : "sample-app/target/classes/gpu/kernels");
		try {
			Bench.requireAvailable(Backend.CUDA);
		}
		catch (SkippedException ex) {
			System.out.println(ex.getMessage());
			return;
		}
		List<Path> sources;
		try (Stream<Path> files = Files.list(dir)) {
			sources = files.filter((file) -> file.toString().endsWith(".cu")).sorted().toList();
		}
		Path cache = Files.createTempDirectory("kernel-load-times-");
		String salt = "// " + UUID.randomUUID() + "\n"; // a fresh source: no earlier cache entry or driver JIT cache applies
		try (DeviceBackend compiling = open(null); DeviceBackend filling = open(cache)) {
			compiling.loadKernel(KernelSource.named("warm_up").cuda(salt + WARM_UP));
			System.out.println("compiler: " + compilation(compiling).compiler());
			System.out.printf(Locale.ROOT, "%-20s %12s %12s %12s%n", "kernel", "prebuilt ms", "compile ms", "cache ms");
			for (Path file : sources) {
				String name = file.getFileName().toString().replaceFirst("\\.cu$", "");
				String source = salt + Files.readString(file, StandardCharsets.UTF_8);
				Path fatbin = file.resolveSibling(name + ".fatbin");
				double prebuilt = Double.NaN;
				if (Files.isRegularFile(fatbin)) {
					KernelSource withPrebuilt = KernelSource.named(name).cuda(source)
						.prebuilt(KernelSource.CudaForm.FATBIN, Files.readAllBytes(fatbin));
					try (DeviceBackend backend = open(null)) {
						backend.loadKernel(KernelSource.named("warm_up").ptx(Bench.EMPTY_PTX.replace("empty", "warm_up")));
						long t0 = System.nanoTime();
						backend.loadKernel(withPrebuilt);
						prebuilt = (System.nanoTime() - t0) / 1e6;
						if (compilation(backend).prebuiltLoads() != 1) {
							throw new IllegalStateException("The prebuilt fatbin of " + name + " was not used");
						}
					}
				}
				long t0 = System.nanoTime();
				compiling.loadKernel(KernelSource.named(name).cuda(source));
				double compile = (System.nanoTime() - t0) / 1e6;
				filling.loadKernel(KernelSource.named(name).cuda(source));
				double cached;
				try (DeviceBackend reading = open(cache)) {
					long t1 = System.nanoTime();
					reading.loadKernel(KernelSource.named(name).cuda(source));
					cached = (System.nanoTime() - t1) / 1e6;
					if (compilation(reading).cacheHits() != 1) {
						throw new IllegalStateException("The disk cache missed for " + name);
					}
				}
				System.out.printf(Locale.ROOT, "%-20s %12.1f %12.1f %12.1f%n", name, prebuilt, compile, cached);
			}
			busyDeviceLoads(sources);
		}
		finally {
			try (Stream<Path> files = Files.walk(cache)) {
				files.sorted(java.util.Comparator.reverseOrder()).forEach((file) -> file.toFile().delete());
			}
		}
	}

	/** The busy-device table, with the first kernel's prebuilt fatbin when there is one (no JIT), else PTX. */
	private static void busyDeviceLoads(List<Path> sources) throws IOException {
		for (Path file : sources) {
			String name = file.getFileName().toString().replaceFirst("\\.cu$", "");
			Path fatbin = file.resolveSibling(name + ".fatbin");
			if (Files.isRegularFile(fatbin)) {
				BusyDeviceLoads.print(Files.readAllBytes(fatbin), name, "the fatbin of " + name);
				return;
			}
		}
		BusyDeviceLoads.print(BusyDeviceLoads.ptxImage(Bench.EMPTY_PTX), "empty", "a PTX kernel, JIT-compiled at each load");
	}

	/** Device 0 of the CUDA backend, opened through the SPI: no pool or registry, no other kernel loaded. */
	private static DeviceBackend open(@Nullable Path cacheDir) {
		BackendConfig config = new BackendConfig(0, 1, 0, Long.MAX_VALUE, List.of(), cacheDir);
		return Objects.requireNonNull(Backends.provider(Backend.CUDA), "JCuda is not on the class path").open(config);
	}

	/** How the backend obtained its kernels' code so far: what tells the routes apart. */
	private static KernelCompilation compilation(DeviceBackend backend) {
		KernelCompilation compilation = backend.kernelCompilation();
		if (compilation == null) {
			throw new IllegalStateException("The " + backend.info().backend() + " backend does not report how it compiles");
		}
		return compilation;
	}

}
