package dev.gpucompute.test;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Inherited;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

import org.springframework.test.context.TestPropertySource;

/**
 * Runs the annotated Spring test on the CPU backend, whatever the machine has and whatever the
 * application's configuration says: it sets {@code gpu.backend=cpu} as a test property, which takes
 * precedence over {@code application.yml}, profiles, environment variables and command-line
 * arguments. Kernels need a CPU implementation ({@code KernelSource.cpu(...)}) to be launched.
 *
 * <pre>{@code
 * @SpringBootTest
 * @GpuCpuBackend
 * class PricingServiceTests { ... }
 * }</pre>
 *
 * With an {@code ApplicationContextRunner}, use {@link #PROPERTY}:
 * {@code runner.withPropertyValues(GpuCpuBackend.PROPERTY)}.
 *
 * <p>Ships in {@code dev.gpucompute:gpu-compute-spring-boot-test}; declare it with {@code test}
 * scope.
 */
@Target(ElementType.TYPE)
@Retention(RetentionPolicy.RUNTIME)
@Documented
@Inherited
@TestPropertySource(properties = GpuCpuBackend.PROPERTY)
public @interface GpuCpuBackend {

	/** The property that forces the CPU backend, as {@code key=value}. */
	String PROPERTY = "gpu.backend=cpu";

}
