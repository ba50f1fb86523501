package dev.gpucompute;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Collections;
import java.util.Enumeration;
import java.util.ServiceConfigurationError;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * How the API finds its implementation ({@link GpuRuntime}), in a class loader of its own that loads
 * the runtime's classes afresh: a missing or broken service file gives the same clear
 * {@link IllegalStateException} to every caller, not an {@link ExceptionInInitializerError} once and
 * a causeless {@link NoClassDefFoundError} after.
 */
class GpuRuntimeLookupTest {

	private static final String SERVICE_FILE = "META-INF/services/dev.gpucompute.GpuRuntime";

	@Test
	void theRuntimesOwnServiceFileIsFound() throws Exception {
		try (URLClassLoader loader = runtimeLoader(null)) {
			Object runtime = lookup(loader);
			assertThat(runtime.getClass().getName()).isEqualTo("dev.gpucompute.internal.context.Engine");
		}
	}

	@Test
	void withoutTheServiceFileEveryCallerIsToldWhatIsMissing() throws Exception {
		try (URLClassLoader loader = runtimeLoader(Collections.emptyEnumeration())) {
			for (int call = 0; call < 2; call++) {
				assertThatThrownBy(() -> lookup(loader)).isInstanceOf(IllegalStateException.class)
					.hasMessageContaining("No implementation of dev.gpucompute.GpuRuntime")
					.hasMessageContaining(SERVICE_FILE);
			}
		}
	}

	@Test
	void anImplementationThatCannotBeCreatedIsNamedWithItsCause(@TempDir Path work) throws Exception {
		Path file = work.resolve("services");
		Files.writeString(file, "dev.gpucompute.internal.context.NoSuchEngine\n");
		URL url = file.toUri().toURL();
		try (URLClassLoader loader = runtimeLoader(Collections.enumeration(java.util.List.of(url)))) {
			for (int call = 0; call < 2; call++) {
				assertThatThrownBy(() -> lookup(loader)).isInstanceOf(IllegalStateException.class)
					.hasMessageContaining("could not be created")
					.hasMessageContaining("NoSuchEngine")
					.hasCauseInstanceOf(ServiceConfigurationError.class);
			}
		}
	}

	/** {@code GpuContextBuilder.runtime()} as loaded by {@code loader}, its exception unwrapped. */
	private static Object lookup(ClassLoader loader) throws Exception {
		Method runtime = Class.forName("dev.gpucompute.GpuContextBuilder", true, loader).getDeclaredMethod("runtime");
		runtime.setAccessible(true);
		try {
			return runtime.invoke(null);
		}
		catch (InvocationTargetException ex) {
			throw (Exception) ex.getCause();
		}
	}

	/**
	 * Loads the runtime's classes itself (child first), so that its lookup runs afresh, and answers
	 * {@code serviceFiles} for the service file when not {@code null}.
	 */
	private static URLClassLoader runtimeLoader(Enumeration<URL> serviceFiles) {
		URL classes = GpuRuntime.class.getProtectionDomain().getCodeSource().getLocation();
		return new URLClassLoader(new URL[] { classes }, GpuRuntimeLookupTest.class.getClassLoader()) {

			@Override
			protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
				if (!name.startsWith("dev.gpucompute.")) {
					return super.loadClass(name, resolve);
				}
				synchronized (getClassLoadingLock(name)) {
					Class<?> loaded = findLoadedClass(name);
					return (loaded != null) ? loaded : findClass(name);
				}
			}

			@Override
			public Enumeration<URL> getResources(String name) throws IOException {
				if (serviceFiles != null && name.equals(SERVICE_FILE)) {
					return serviceFiles;
				}
				return super.getResources(name);
			}

		};
	}

}
