package dev.gpucompute.autoconfigure.actuate;

import java.util.List;
import java.util.Set;
import java.util.function.Predicate;

import org.jspecify.annotations.Nullable;
import org.springframework.boot.actuate.endpoint.EndpointId;
import org.springframework.boot.actuate.endpoint.SecurityContext;
import org.springframework.boot.actuate.endpoint.web.AdditionalPathsMapper;
import org.springframework.boot.actuate.endpoint.web.WebServerNamespace;
import org.springframework.boot.context.properties.bind.Bindable;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.boot.health.actuate.endpoint.AdditionalHealthEndpointPath;
import org.springframework.boot.health.actuate.endpoint.HealthEndpointGroup;
import org.springframework.boot.health.actuate.endpoint.HealthEndpointGroups;
import org.springframework.boot.health.actuate.endpoint.HealthEndpointGroupsPostProcessor;
import org.springframework.boot.health.actuate.endpoint.HttpCodeStatusMapper;
import org.springframework.boot.health.actuate.endpoint.StatusAggregator;
import org.springframework.core.Ordered;
import org.springframework.core.env.Environment;

/**
 * Adds the GPU health contributors to Spring Boot's Kubernetes probe groups when the application
 * has not chosen their members itself: {@code liveness} gets {@code gpu} (a context lost to a
 * CUDA sticky error or closed stays lost until the process restarts, so the kubelet should restart
 * it), {@code readiness} gets {@code gpu} and {@code gpuStreams} (a stalled stream pool should take
 * the pod out of the load balancer, not restart it). A group whose
 * {@code management.endpoint.health.group.<name>.include} or {@code .exclude} is set is left as the
 * application configured it.
 *
 * <p>Runs after Spring Boot's own probe post-processor (same order, registered later), which
 * creates the probe groups when probes are enabled ({@code management.endpoint.health.probes.enabled},
 * on by default on Kubernetes); without probe groups it changes nothing.
 */
final class GpuHealthGroups implements HealthEndpointGroupsPostProcessor, Ordered {

	static final String LIVENESS = "liveness";

	static final String READINESS = "readiness";

	private static final String GPU = "gpu";

	private static final String GPU_STREAMS = "gpuStreams";

	private final boolean livenessConfigured;

	private final boolean readinessConfigured;

	GpuHealthGroups(Environment environment) {
		this.livenessConfigured = configured(environment, LIVENESS);
		this.readinessConfigured = configured(environment, READINESS);
	}

	private static boolean configured(Environment environment, String group) {
		Binder binder = Binder.get(environment);
		String prefix = "management.endpoint.health.group." + group;
		return binder.bind(prefix + ".include", Bindable.setOf(String.class)).isBound()
				|| binder.bind(prefix + ".exclude", Bindable.setOf(String.class)).isBound();
	}

	@Override
	public int getOrder() {
		return Ordered.LOWEST_PRECEDENCE;
	}

	@Override
	public HealthEndpointGroups postProcessHealthEndpointGroups(HealthEndpointGroups groups) {
		return new Groups(groups);
	}

	/** Whether {@code name} is {@code contributor} or one of its components ({@code gpu/1}). */
	private static boolean isOrUnder(String name, String contributor) {
		return name.equals(contributor) || name.startsWith(contributor + "/");
	}

	private final class Groups implements HealthEndpointGroups, AdditionalPathsMapper {

		private final HealthEndpointGroups delegate;

		Groups(HealthEndpointGroups delegate) {
			this.delegate = delegate;
		}

		@Override
		public HealthEndpointGroup getPrimary() {
			return this.delegate.getPrimary();
		}

		@Override
		public Set<String> getNames() {
			return this.delegate.getNames();
		}

		@Override
		public @Nullable HealthEndpointGroup get(String name) {
			HealthEndpointGroup group = this.delegate.get(name);
			if (group == null) {
				return null;
			}
			if (name.equals(LIVENESS) && !GpuHealthGroups.this.livenessConfigured) {
				return new WithGpu(group, (member) -> isOrUnder(member, GPU));
			}
			if (name.equals(READINESS) && !GpuHealthGroups.this.readinessConfigured) {
				return new WithGpu(group, (member) -> isOrUnder(member, GPU) || isOrUnder(member, GPU_STREAMS));
			}
			return group;
		}

		@Override
		public @Nullable List<String> getAdditionalPaths(EndpointId endpointId, WebServerNamespace webServerNamespace) {
			return (this.delegate instanceof AdditionalPathsMapper mapper)
					? mapper.getAdditionalPaths(endpointId, webServerNamespace) : null;
		}

	}

	/** A probe group with the GPU contributors added to its members. */
	private record WithGpu(HealthEndpointGroup group, Predicate<String> gpu) implements HealthEndpointGroup {

		@Override
		public boolean isMember(String name) {
			return this.group.isMember(name) || this.gpu.test(name);
		}

		@Override
		public boolean showComponents(SecurityContext securityContext) {
			return this.group.showComponents(securityContext);
		}

		@Override
		public boolean showDetails(SecurityContext securityContext) {
			return this.group.showDetails(securityContext);
		}

		@Override
		public StatusAggregator getStatusAggregator() {
			return this.group.getStatusAggregator();
		}

		@Override
		public HttpCodeStatusMapper getHttpCodeStatusMapper() {
			return this.group.getHttpCodeStatusMapper();
		}

		@Override
		public @Nullable AdditionalHealthEndpointPath getAdditionalPath() {
			return this.group.getAdditionalPath();
		}

	}

}
