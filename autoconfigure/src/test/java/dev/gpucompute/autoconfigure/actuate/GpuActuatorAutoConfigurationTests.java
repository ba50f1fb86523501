package dev.gpucompute.autoconfigure.actuate;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Map;

import org.junit.jupiter.api.Test;

import org.springframework.boot.actuate.autoconfigure.endpoint.EndpointAutoConfiguration;
import org.springframework.boot.actuate.endpoint.annotation.Endpoint;
import org.springframework.boot.actuate.info.Info;
import org.springframework.boot.actuate.info.InfoContributor;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.health.contributor.CompositeHealthContributor;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.boot.health.contributor.Status;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

import dev.gpucompute.GpuContext;
import dev.gpucompute.autoconfigure.GpuAutoConfiguration;

/**
 * The Actuator auto-configurations: beans present by default, switched off by the usual
 * properties, backing off without Actuator or without a GPU context.
 */
class GpuActuatorAutoConfigurationTests {

	private final ApplicationContextRunner runner = new ApplicationContextRunner()
		.withPropertyValues("gpu.backend=cpu", "gpu.streams.pool-size=1", "gpu.cpu.threads=1", "gpu.kernels.locations=",
				"management.endpoints.web.exposure.include=gpu")
		.withConfiguration(AutoConfigurations.of(GpuAutoConfiguration.class, EndpointAutoConfiguration.class,
				GpuEndpointAutoConfiguration.class, GpuHealthContributorAutoConfiguration.class,
				GpuInfoContributorAutoConfiguration.class));

	@Test
	void everythingIsThereByDefault() {
		this.runner.run((context) -> assertThat(context).hasSingleBean(GpuEndpoint.class)
			.hasSingleBean(GpuHealthIndicator.class)
			.hasSingleBean(GpuInfoContributor.class)
			.hasBean("gpuHealthIndicator"));
	}

	@Test
	void healthIsDownWithTheReasonOnceTheContextIsClosed() {
		this.runner.run((context) -> {
			HealthIndicator indicator = context.getBean(GpuHealthIndicator.class);
			Health up = indicator.health();
			assertThat(up.getStatus()).isEqualTo(Status.UP);
			assertThat(up.getDetails()).containsKeys("backend", "device", "memoryFreeBytes", "poolSaturation");
			GpuContext gpu = context.getBean(GpuContext.class);
			gpu.close();
			Health down = indicator.health();
			assertThat(down.getStatus()).isEqualTo(Status.DOWN);
			assertThat(down.getDetails()).containsEntry("reason", gpu.healthProblem()).doesNotContainKey("memoryFreeBytes");
		});
	}

	@Test
	void healthDetailsArePlainValuesOnEveryDevice() {
		// What JSON shows is what an in-process reader gets: no runtime enum among the details.
		this.runner.run((context) -> assertPlainDetails(context.getBean(GpuHealthIndicator.class).health(), "0"));
		this.runner.withPropertyValues("gpu.devices=all", "gpu.cpu.devices=2").run((context) -> {
			CompositeHealthContributor devices = (CompositeHealthContributor) context.getBean("gpuHealthIndicator");
			for (String ordinal : new String[] { "0", "1" }) {
				assertPlainDetails(((HealthIndicator) devices.getContributor(ordinal)).health(), ordinal);
			}
		});
	}

	private static void assertPlainDetails(Health health, String ordinal) {
		Map<String, Object> details = health.getDetails();
		assertThat(details.get("backend")).as("backend of device %s", ordinal).isInstanceOf(String.class).isEqualTo("CPU");
		assertThat(details.get("device")).isInstanceOf(String.class);
		assertThat(details.get("ordinal")).isEqualTo(Integer.valueOf(ordinal));
		assertThat(details.get("memoryFreeBytes")).isInstanceOf(Long.class);
		assertThat(details.get("poolSaturation")).isInstanceOf(Double.class);
		assertThat(details.values()).allSatisfy((value) -> assertThat(value).isInstanceOfAny(String.class, Number.class));
	}

	@Test
	void infoContributesTheDevice() {
		this.runner.run((context) -> {
			Info.Builder builder = new Info.Builder();
			context.getBean(GpuInfoContributor.class).contribute(builder);
			GpuInfoContributor.GpuInfo info = (GpuInfoContributor.GpuInfo) builder.build().get("gpu");
			GpuContext gpu = context.getBean(GpuContext.class);
			assertThat(info.backend()).isEqualTo(gpu.backend());
			assertThat(info.device()).isEqualTo(gpu.device().name());
			assertThat(info.uuid()).isEqualTo(gpu.device().uuid());
			assertThat(info.driverVersion()).isEqualTo(gpu.device().driverVersion());
		});
	}

	@Test
	void endpointIsOnlyCreatedWhenExposed() {
		this.runner.withPropertyValues("management.endpoints.web.exposure.include=health")
			.run((context) -> assertThat(context).doesNotHaveBean(GpuEndpoint.class));
	}

	@Test
	void endpointCanBeSwitchedOff() {
		// Upper case: a runner's environment lacks the lenient enum conversion of a SpringApplication.
		this.runner.withPropertyValues("management.endpoint.gpu.access=NONE")
			.run((context) -> assertThat(context).doesNotHaveBean(GpuEndpoint.class).hasSingleBean(GpuHealthIndicator.class));
	}

	@Test
	void healthContributorCanBeSwitchedOff() {
		this.runner.withPropertyValues("management.health.gpu.enabled=false")
			.run((context) -> assertThat(context).doesNotHaveBean(GpuHealthIndicator.class).hasSingleBean(GpuEndpoint.class));
	}

	@Test
	void streamPoolHealthContributorIsOnByDefaultAndCanBeSwitchedOffOnItsOwn() {
		this.runner.run((context) -> assertThat(context).hasSingleBean(GpuStreamsHealthIndicator.class)
			.hasSingleBean(GpuHealthIndicator.class));
		this.runner.withPropertyValues("management.health.gpu-streams.enabled=false")
			.run((context) -> assertThat(context).doesNotHaveBean(GpuStreamsHealthIndicator.class)
				.hasSingleBean(GpuHealthIndicator.class));
		this.runner.withPropertyValues("management.health.gpu.enabled=false")
			.run((context) -> assertThat(context).hasSingleBean(GpuStreamsHealthIndicator.class));
	}

	@Test
	void infoContributorCanBeSwitchedOff() {
		this.runner.withPropertyValues("management.info.gpu.enabled=false")
			.run((context) -> assertThat(context).doesNotHaveBean(GpuInfoContributor.class));
	}

	@Test
	void userDefinedHealthIndicatorWins() {
		this.runner.withBean("gpuHealthIndicator", HealthIndicator.class, () -> () -> Health.up().withDetails(Map.of()).build())
			.run((context) -> assertThat(context).doesNotHaveBean(GpuHealthIndicator.class).hasBean("gpuHealthIndicator"));
	}

	@Test
	void backsOffWithoutAGpuContext() {
		this.runner.withPropertyValues("gpu.enabled=false")
			.run((context) -> assertThat(context).doesNotHaveBean(GpuEndpoint.class)
				.doesNotHaveBean(GpuHealthIndicator.class)
				.doesNotHaveBean(GpuInfoContributor.class));
	}

	@Test
	void backsOffWithoutActuator() {
		this.runner.withClassLoader(new FilteredClassLoader(Endpoint.class, HealthIndicator.class, InfoContributor.class))
			.run((context) -> assertThat(context).hasSingleBean(GpuContext.class)
				.doesNotHaveBean(GpuEndpoint.class)
				.doesNotHaveBean(GpuHealthIndicator.class)
				.doesNotHaveBean(GpuInfoContributor.class));
	}

}
