package dev.gpucompute.spi;

import java.util.ArrayList;
import java.util.List;
import java.util.ServiceConfigurationError;
import java.util.ServiceLoader;

import dev.gpucompute.Backend;

/** Finds the {@link BackendProvider}s on the class path. */
public final class Backends {

	private Backends() {
	}

	/**
	 * The provider for {@code backend}, or {@code null} when none is on the class path (for CUDA:
	 * JCuda is missing).
	 */
	public static BackendProvider provider(Backend backend) {
		for (BackendProvider provider : providers()) {
			if (provider.backend() == backend) {
				return provider;
			}
		}
		return null;
	}

	/** All providers that could be instantiated. */
	public static List<BackendProvider> providers() {
		List<BackendProvider> result = new ArrayList<>();
		ServiceLoader<BackendProvider> loader = ServiceLoader.load(BackendProvider.class, Backends.class.getClassLoader());
		var iterator = loader.iterator();
		while (true) {
			try {
				if (!iterator.hasNext()) {
					break;
				}
				result.add(iterator.next());
			}
			catch (ServiceConfigurationError | LinkageError ex) {
				// A provider whose dependencies are missing (JCuda not on the class path) is skipped.
			}
		}
		return result;
	}

}
