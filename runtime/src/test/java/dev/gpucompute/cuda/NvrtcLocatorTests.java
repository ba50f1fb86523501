package dev.gpucompute.cuda;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Where NVRTC libraries are looked for, on a directory tree made here. */
class NvrtcLocatorTests {

	@Test
	void searchesTheUsualPlacesInOrderNewestVersionFirst(@TempDir Path root) throws Exception {
		Path explicit = touch(root, "custom/libnvrtc.so.13");
		Path cudaHome = touch(root, "toolkits/cuda-13/lib64/libnvrtc.so.13");
		Path ldPath = touch(root, "ld/libnvrtc.so.12");
		Path local12 = touch(root, "usr/local/cuda-12.6/lib64/libnvrtc.so.12");
		Path local13 = touch(root, "usr/local/cuda-13.0/lib64/libnvrtc.so.13");
		Path debianOld = touch(root, "usr/lib/x86_64-linux-gnu/libnvrtc.so.11.2");
		Path debianNew = touch(root, "usr/lib/x86_64-linux-gnu/libnvrtc.so.12");
		touch(root, "usr/lib/x86_64-linux-gnu/libnvrtc-builtins.so.12.6");
		Path wheel = touch(root, "opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib/libnvrtc.so.13");
		touch(root, "opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib/libnvrtc.alt.so.13");
		touch(root, "opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib/libnvrtc-builtins.so.13.0");
		Path userWheel = touch(root, "home/me/.local/lib/python3.11/site-packages/nvidia/cuda_nvrtc/lib/libnvrtc.so.12");
		NvrtcLocator locator = new NvrtcLocator(root, Map.of("CUDA_HOME", "/toolkits/cuda-13", "LD_LIBRARY_PATH", "/ld:rel"),
				explicit.toString(), Path.of("/home/me"));
		assertThat(locator.candidates()).containsExactly(explicit, cudaHome, ldPath, local13, local12, debianNew, debianOld,
				wheel, userWheel);
	}

	@Test
	void theEnvironmentNamesALibraryWhenNoPropertyDoes(@TempDir Path root) {
		NvrtcLocator locator = new NvrtcLocator(root, Map.of("GPU_NVRTC_LIBRARY", "/x/libnvrtc.so.13"), " ", null);
		assertThat(locator.explicitLibrary()).isEqualTo("/x/libnvrtc.so.13");
		assertThat(locator.candidates()).containsExactly(Path.of("/x/libnvrtc.so.13"));
	}

	private static Path touch(Path root, String file) throws Exception {
		Path path = root.resolve(file);
		Files.createDirectories(path.getParent());
		Files.writeString(path, "");
		return path;
	}

}
