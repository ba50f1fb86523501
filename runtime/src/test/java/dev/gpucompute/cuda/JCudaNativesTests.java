package dev.gpucompute.cuda;

import java.io.IOException;
import java.net.URL;
import java.util.Collections;
import java.util.Enumeration;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import dev.gpucompute.Backend;
import dev.gpucompute.spi.BackendProvider;
import dev.gpucompute.spi.Backends;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Tests for {@link JCudaNatives}: the starter leaves JCuda's platform natives to the application,
 * and the start-up log and failure report say what to add when they are missing. This build's test
 * class path has JCuda with its linux-x86_64 natives; the tests hide them with a class loader.
 */
class JCudaNativesTests {

	private final String osName = System.getProperty("os.name");

	private final String osArch = System.getProperty("os.arch");

	@AfterEach
	void restorePlatform() {
		System.setProperty("os.name", this.osName);
		System.setProperty("os.arch", this.osArch);
	}

	@Test
	void nothingIsMissingWhenTheNativesAreOnTheClassPath() {
		platform("Linux", "amd64");
		assertThat(JCudaNatives.missing(getClass().getClassLoader())).isNull();
	}

	@Test
	void missingNativesOfAPublishedPlatformNameTheDependency() {
		platform("Linux", "amd64");
		assertThat(JCudaNatives.missing(withoutNatives())).isEqualTo("JCuda's native libraries for linux-x86_64 are not "
				+ "on the class path: add the dependency org.jcuda:jcuda-natives:12.6.0:linux-x86_64 (runtime scope) to "
				+ "the application");
	}

	@Test
	void onLinuxAarch64TheNativesMustBeBuilt() {
		// Grace Hopper: JCuda publishes no natives for linux-aarch64; the ones for x86-64 do not count.
		platform("Linux", "aarch64");
		assertThat(JCudaNatives.missing(getClass().getClassLoader())).startsWith(
				"JCuda's native libraries for linux-aarch64 are not on the class path, and JCuda publishes none for this "
						+ "platform: build them")
			.contains("org.jcuda:jcuda-natives:12.6.0:linux-aarch64")
			.contains("libJCudaDriver-12.6.0-linux-aarch64.so on java.library.path");
	}

	@Test
	void windowsNativesAreDlls() {
		platform("Windows 11", "amd64");
		assertThat(JCudaNatives.missing(withoutNatives())).contains("org.jcuda:jcuda-natives:12.6.0:windows-x86_64");
	}

	@Test
	void withoutJCudaNothingIsMissing() {
		// Without JCuda's classes the CUDA backend is simply absent; there are no natives to add.
		assertThat(JCudaNatives.missing(new ClassLoader(null) {
		})).isNull();
	}

	@Test
	void theCudaProviderSaysWhatIsMissingThroughTheSpi() {
		// What the starter asks (BackendProvider.missingDependency), so that it needs nothing of this package.
		BackendProvider cuda = Backends.provider(Backend.CUDA);
		platform("Linux", "amd64");
		assertThat(cuda.missingDependency()).isNull();
		platform("Linux", "aarch64");
		assertThat(cuda.missingDependency()).isEqualTo(JCudaNatives.missing(getClass().getClassLoader()))
			.contains("org.jcuda:jcuda-natives:12.6.0:linux-aarch64");
		assertThat(Backends.provider(Backend.CPU).missingDependency()).isNull();
	}

	private static void platform(String name, String arch) {
		System.setProperty("os.name", name);
		System.setProperty("os.arch", arch);
	}

	/** This test class path without the natives jar's {@code lib/} entries. */
	private ClassLoader withoutNatives() {
		return new ClassLoader(getClass().getClassLoader()) {

			@Override
			public URL getResource(String name) {
				return name.startsWith("lib/") ? null : super.getResource(name);
			}

			@Override
			public Enumeration<URL> getResources(String name) throws IOException {
				return name.startsWith("lib/") ? Collections.emptyEnumeration() : super.getResources(name);
			}

		};
	}

}
