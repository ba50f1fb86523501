package dev.gpucompute.cuda;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.InputStream;
import java.lang.reflect.Constructor;
import java.lang.reflect.Method;

import org.junit.jupiter.api.Test;

/**
 * JNA is an optional dependency of the runtime: without it the CUDA backend still opens, and graphs
 * captured again are instantiated anew instead of updated in place, saying why. The graph driver is
 * loaded here through a class loader that hides {@code com.sun.jna}, as an application without JNA
 * would; no CUDA driver is needed (its constructor only looks for the update's entry point).
 */
class CudaGraphDriverWithoutJnaTests {

	/** Defines the runtime's classes itself and refuses JNA's; everything else comes from the test's loader. */
	static final class WithoutJna extends ClassLoader {

		WithoutJna(ClassLoader parent) {
			super(parent);
		}

		@Override
		protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
			if (name.startsWith("com.sun.jna.")) {
				throw new ClassNotFoundException(name + " (hidden: an application without JNA)");
			}
			if (!name.startsWith("dev.gpucompute.")) {
				return super.loadClass(name, resolve);
			}
			synchronized (getClassLoadingLock(name)) {
				Class<?> loaded = findLoadedClass(name);
				if (loaded == null) {
					try (InputStream in = getParent().getResourceAsStream(name.replace('.', '/') + ".class")) {
						if (in == null) {
							throw new ClassNotFoundException(name);
						}
						byte[] bytes = in.readAllBytes();
						loaded = defineClass(name, bytes, 0, bytes.length);
					}
					catch (IOException ex) {
						throw new ClassNotFoundException(name, ex);
					}
				}
				if (resolve) {
					resolveClass(loaded);
				}
				return loaded;
			}
		}

	}

	@Test
	void withoutJnaTheDriverIsMadeAndUpdatesFallBackToANewInstantiationSayingWhy() throws Exception {
		ClassLoader loader = new WithoutJna(getClass().getClassLoader());
		Class<?> type = Class.forName(CudaGraphDriver.class.getName(), true, loader);
		assertThat(type.getClassLoader()).isSameAs(loader);
		Constructor<?> constructor = type.getDeclaredConstructor();
		constructor.setAccessible(true);
		Object driver = constructor.newInstance();
		Method reason = type.getDeclaredMethod("updateUnavailable");
		reason.setAccessible(true);
		assertThat((String) reason.invoke(driver)).isEqualTo("no JNA on the class path to call cuGraphExecUpdate_v2");
		Method update = type.getDeclaredMethod("update", Class.forName(CudaGraphs.ExecHandle.class.getName(), false, loader),
				Class.forName(CudaGraphs.GraphHandle.class.getName(), false, loader), int[].class);
		update.setAccessible(true);
		Object exec = newInstance(Class.forName(CudaGraphs.ExecHandle.class.getName(), true, loader));
		Object graph = newInstance(Class.forName(CudaGraphs.GraphHandle.class.getName(), true, loader));
		assertThat(update.invoke(driver, exec, graph, new int[1])).isEqualTo(CudaGraphs.UPDATE_UNAVAILABLE);
	}

	private static Object newInstance(Class<?> type) throws Exception {
		Constructor<?> constructor = type.getDeclaredConstructor();
		constructor.setAccessible(true);
		return constructor.newInstance();
	}

}
