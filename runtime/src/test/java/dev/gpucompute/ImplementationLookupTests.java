package dev.gpucompute;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.net.URL;
import java.net.URLClassLoader;

import org.junit.jupiter.api.Test;

/**
 * How the API finds its implementation (the public static methods of
 * {@code dev.gpucompute.internal.context.Engine}, found by name), in a class loader of its own that
 * loads the runtime's classes afresh: a missing implementation gives the same clear
 * {@link IllegalStateException} to every caller, not an {@link ExceptionInInitializerError} once and
 * a causeless {@link NoClassDefFoundError} after.
 */
class ImplementationLookupTests {

	private static final String ENGINE = "dev.gpucompute.internal.context.Engine";

	@Test
	void theRuntimesOwnImplementationIsFound() throws Exception {
		try (URLClassLoader loader = runtimeLoader(false)) {
			assertThat(deviceCount(loader)).isEqualTo(3);
		}
	}

	@Test
	void withoutTheImplementationEveryCallerIsToldWhatIsMissing() throws Exception {
		try (URLClassLoader loader = runtimeLoader(true)) {
			for (int call = 0; call < 2; call++) {
				assertThatThrownBy(() -> deviceCount(loader)).isInstanceOf(IllegalStateException.class)
					.hasMessageContaining("The implementation of the gpu-compute API is missing")
					.hasMessageContaining(ENGINE)
					.hasCauseInstanceOf(ClassNotFoundException.class);
			}
		}
	}

	/** {@code GpuContextBuilder.deviceCount(CPU, 3)} as loaded by {@code loader}, its exception unwrapped. */
	private static Object deviceCount(ClassLoader loader) throws Exception {
		Class<?> backend = Class.forName("dev.gpucompute.Backend", true, loader);
		Method count = Class.forName("dev.gpucompute.GpuContextBuilder", true, loader)
			.getDeclaredMethod("deviceCount", backend, int.class);
		count.setAccessible(true);
		try {
			return count.invoke(null, backend.getField("CPU").get(null), 3);
		}
		catch (InvocationTargetException ex) {
			throw (Exception) ex.getCause();
		}
	}

	/** Loads the runtime's classes itself (child first), so that its lookup runs afresh; without the engine when asked. */
	private static URLClassLoader runtimeLoader(boolean withoutEngine) {
		URL classes = GpuContext.class.getProtectionDomain().getCodeSource().getLocation();
		return new URLClassLoader(new URL[] { classes }, ImplementationLookupTests.class.getClassLoader()) {

			@Override
			protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
				if (!name.startsWith("dev.gpucompute.")) {
					return super.loadClass(name, resolve);
				}
				if (withoutEngine && name.equals(ENGINE)) {
					throw new ClassNotFoundException(name);
				}
				synchronized (getClassLoadingLock(name)) {
					Class<?> loaded = findLoadedClass(name);
					return (loaded != null) ? loaded : findClass(name);
				}
			}

		};
	}

}
