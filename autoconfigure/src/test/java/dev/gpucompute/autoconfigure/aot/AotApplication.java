package dev.gpucompute.autoconfigure.aot;

import java.nio.FloatBuffer;

import org.springframework.aot.AotDetector;
import org.springframework.boot.CommandLineRunner;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.beans.factory.annotation.Qualifier;
import org.springframework.boot.health.contributor.HealthContributor;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.context.annotation.Bean;

import dev.gpucompute.DeviceBuffer;
import dev.gpucompute.GpuLauncher;
import dev.gpucompute.HostArray;
import dev.gpucompute.KernelSource;
import dev.gpucompute.LaunchConfig;
import dev.gpucompute.ParamType;
import dev.gpucompute.StreamLease;
import dev.gpucompute.StreamPool;
import dev.gpucompute.StreamScope;

/**
 * An application on the starter that {@link GpuAotTests} processes ahead of time and then starts,
 * in a child JVM, with {@code spring.aot.enabled=true}: it launches a kernel and prints what it
 * found as {@code KEY=value} lines.
 */
@SpringBootConfiguration(proxyBeanMethods = false)
@EnableAutoConfiguration
public class AotApplication {

	public static void main(String[] args) {
		SpringApplication.run(AotApplication.class, args);
	}

	@Bean
	KernelSource doubleIt() {
		return KernelSource.named("double_it").params(ParamType.INT, ParamType.BUFFER).cpu((block, kernelArgs) -> {
			int n = kernelArgs.i32(0);
			FloatBuffer data = kernelArgs.floats(1);
			for (long i = block.firstIndex(); i < block.endIndex(n); i++) {
				data.put((int) i, 2 * data.get((int) i));
			}
		});
	}

	@Bean
	CommandLineRunner report(GpuLauncher launcher, StreamPool pool,
			@Qualifier("gpuHealthIndicator") HealthContributor gpu,
			@Qualifier("gpuStreamsHealthIndicator") HealthContributor gpuStreams) {
		HealthIndicator gpuHealthIndicator = (HealthIndicator) gpu;
		HealthIndicator gpuStreamsHealthIndicator = (HealthIndicator) gpuStreams;
		return (args) -> {
			System.out.println("AOT=" + AotDetector.useGeneratedArtifacts());
			float[] values = { 1, 2, 3, 4 };
			try (StreamLease lease = pool.acquire();
					StreamScope scope = launcher.useStream(lease.stream());
					DeviceBuffer buffer = launcher.upload(HostArray.of(values))) {
				launcher.launch(launcher.kernel("double_it"), LaunchConfig.linear(values.length, 32), values.length,
						buffer);
				buffer.download(HostArray.of(values), lease.stream()).join();
			}
			System.out.println("RESULT=" + java.util.Arrays.toString(values));
			System.out.println("BACKEND=" + launcher.kernel("double_it").name() + "@"
					+ gpuHealthIndicator.health().getDetails().get("backend"));
			System.out.println("HEALTH=" + gpuHealthIndicator.health().getStatus() + ","
					+ gpuStreamsHealthIndicator.health().getStatus());
		};
	}

}
