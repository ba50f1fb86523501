package dev.gpucompute.autoconfigure.diagnostics;

import org.springframework.boot.diagnostics.AbstractFailureAnalyzer;
import org.springframework.core.Ordered;

/**
 * Base of the GPU failure analyzers. They run before Spring Boot's own analyzers (which are
 * unordered), so that a binding failure under {@code gpu.*} gets the GPU-specific explanation
 * rather than the generic one; each analyzer answers only for its own exception types.
 *
 * @param <T> the exception type analysed
 */
abstract class GpuFailureAnalyzer<T extends Throwable> extends AbstractFailureAnalyzer<T> implements Ordered {

	@Override
	public int getOrder() {
		return 0;
	}

}
