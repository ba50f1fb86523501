package dev.gpucompute.autoconfigure.diagnostics;

import org.jspecify.annotations.Nullable;
import org.springframework.beans.factory.NoSuchBeanDefinitionException;
import org.springframework.boot.diagnostics.FailureAnalysis;
import org.springframework.boot.diagnostics.analyzer.AbstractInjectionFailureAnalyzer;
import org.springframework.boot.origin.Origin;
import org.springframework.core.Ordered;
import org.springframework.core.env.Environment;

import dev.gpucompute.autoconfigure.PropertyOrigins;

/**
 * Explains a missing gpu-compute bean (a {@code GpuLauncher}, {@code StreamPool}, ...) that some
 * component requires while {@code gpu.enabled} is {@code false}: Spring Boot's generic report says
 * only that the bean could not be found; this one says why and where the property was set.
 * Missing beans for any other reason are left to Spring Boot's analyzer and its condition report.
 */
class GpuDisabledFailureAnalyzer extends AbstractInjectionFailureAnalyzer<NoSuchBeanDefinitionException>
		implements Ordered {

	private static final String PACKAGE = "dev.gpucompute.";

	private final Environment environment;

	GpuDisabledFailureAnalyzer(Environment environment) {
		this.environment = environment;
	}

	@Override
	protected @Nullable FailureAnalysis analyze(Throwable rootFailure, NoSuchBeanDefinitionException cause,
			@Nullable String description) {
		Class<?> type = cause.getBeanType();
		if (type == null || !type.getName().startsWith(PACKAGE) || gpuEnabled()) {
			return null;
		}
		Origin origin = PropertyOrigins.origin(this.environment, "gpu.enabled");
		StringBuilder message = new StringBuilder((description != null) ? description : "A component")
			.append(" required a bean of type '")
			.append(type.getName())
			.append("' that could not be found: gpu.enabled is false");
		if (origin != null) {
			message.append(" (").append(origin).append(')');
		}
		message.append(", so gpu-compute configures no GPU beans (GpuContext, StreamPool, EventRegistry, GpuLauncher, ")
			.append("GpuKernels).");
		String action = "Remove gpu.enabled=false (or set it to true) to get the GPU beans. If the application is meant "
				+ "to start without them, make the component optional: inject ObjectProvider<" + type.getSimpleName()
				+ ">, or create it only when the GPU is on with @ConditionalOnBooleanProperty(name = \"gpu.enabled\", "
				+ "matchIfMissing = true).";
		return new FailureAnalysis(message.toString(), action, cause);
	}

	private boolean gpuEnabled() {
		try {
			return this.environment.getProperty("gpu.enabled", Boolean.class, true);
		}
		catch (RuntimeException ex) {
			// Not a boolean: binding reports that on its own.
			return true;
		}
	}

	@Override
	public int getOrder() {
		return 0;
	}

}
