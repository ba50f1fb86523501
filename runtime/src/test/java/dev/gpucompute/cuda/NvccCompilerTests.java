package dev.gpucompute.cuda;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import dev.gpucompute.KernelCompilationException;

/**
 * The nvcc route on its own, with fake {@code nvcc} scripts that log their arguments and working
 * directory, so that it runs on any Linux build machine (the real nvcc is exercised by
 * {@link CudaCompilerTests} where one is installed).
 */
class NvccCompilerTests {

	private static final String SOURCE = "extern \"C\" __global__ void k() {}\n";

	@TempDir
	Path dir;

	/**
	 * A fake nvcc: appends "pwd | args" to {@code calls.log}; answers {@code --list-gpu-arch} with
	 * compute_75, 80 and 90; otherwise copies its last argument (the .cu) to the file after {@code -o}.
	 */
	private Path fakeNvcc(String name) throws Exception {
		Path log = this.dir.resolve(name + ".calls.log");
		return script(name, """
				echo "$(pwd) | $*" >> '%s'
				if [ "$1" = "--list-gpu-arch" ]; then printf 'compute_75\\ncompute_80\\ncompute_90\\n'; exit 0; fi
				out=""; prev=""; last=""
				for a in "$@"; do if [ "$prev" = "-o" ]; then out="$a"; fi; prev="$a"; last="$a"; done
				cat "$last" > "$out"
				""".formatted(log));
	}

	private Path script(String name, String body) throws Exception {
		Path file = this.dir.resolve(name);
		Files.writeString(file, "#!/bin/sh\n" + body);
		assertThat(file.toFile().setExecutable(true)).isTrue();
		return file;
	}

	private List<String> calls(String name) throws Exception {
		Path log = this.dir.resolve(name + ".calls.log");
		return Files.exists(log) ? Files.readAllLines(log) : List.of();
	}

	@Test
	void theFirstCandidateThatCompilesIsChosenOnceAndKept() throws Exception {
		Path notExecutable = Files.writeString(this.dir.resolve("plain"), "#!/bin/sh\nexit 0\n");
		Path working = fakeNvcc("nvcc");
		Path later = fakeNvcc("later");
		NvccCompiler nvcc = new NvccCompiler(List.of(this.dir.resolve("missing"), notExecutable, working, later));
		assertThat(nvcc.path()).isEqualTo(working);
		assertThat(nvcc.path()).isEqualTo(working);
		assertThat(nvcc.problem()).isNull();
		assertThat(calls("nvcc")).as("one trial compile, however often asked").hasSize(1);
		assertThat(calls("nvcc").get(0)).contains("-fatbin -o ").endsWith("probe.cu");
		assertThat(calls("later")).as("candidates after the working one are not tried").isEmpty();
	}

	@Test
	void aCandidateThatCannotCompileIsPassedOverWithTheFirstLineOfItsOutput() throws Exception {
		Path broken = script("broken", "echo 'nvcc fatal : no host compiler' >&2\necho 'second line'\nexit 3\n");
		NvccCompiler nvcc = new NvccCompiler(List.of(broken));
		assertThat(nvcc.path()).isNull();
		assertThat(nvcc.problem())
			.isEqualTo("nvcc at " + broken + " cannot compile (a trial compile exited with status 3: nvcc fatal : no host compiler)");
		Path working = fakeNvcc("nvcc");
		NvccCompiler both = new NvccCompiler(List.of(broken, working));
		assertThat(both.path()).isEqualTo(working);
		assertThat(both.problem()).as("a usable nvcc leaves no problem").isNull();
	}

	@Test
	void withNoCandidateThereIsNeitherAnNvccNorAProblem() {
		NvccCompiler nvcc = new NvccCompiler(List.of(this.dir.resolve("missing")));
		assertThat(nvcc.path()).isNull();
		assertThat(nvcc.problem()).isNull();
	}

	@Test
	void compileWritesTheSourceRunsNvccForTheTargetAndReturnsItsImage() throws Exception {
		Path fake = fakeNvcc("nvcc");
		NvccCompiler nvcc = new NvccCompiler(List.of(fake));
		CudaCompiler.Result result = nvcc.compile(fake, "saxpy", SOURCE, List.of("-lineinfo"), 90);
		assertThat(new String(result.image(), StandardCharsets.UTF_8)).as("the fake copies the .cu it was given")
			.isEqualTo(SOURCE);
		assertThat(result.compiler()).isEqualTo("nvcc (" + fake + ")");
		String call = calls("nvcc").get(0);
		String workDir = call.substring(0, call.indexOf(" | "));
		assertThat(call).endsWith(" | -fatbin -gencode=arch=compute_90,code=[sm_90,compute_90] -lineinfo -o " + workDir
				+ "/saxpy.fatbin " + workDir + "/saxpy.cu");
		assertThat(Path.of(workDir)).as("its temporary directory is deleted").doesNotExist();
	}

	@Test
	void optionsThatNameATargetReplaceTheGencode() throws Exception {
		Path fake = fakeNvcc("nvcc");
		new NvccCompiler(List.of(fake)).compile(fake, "k", SOURCE, List.of("-arch=sm_80"), 90);
		assertThat(calls("nvcc").get(0)).contains("| -fatbin -arch=sm_80 -o ").doesNotContain("gencode");
	}

	@Test
	void aFailedCompileComesBackWithNvccsOutputAndTheCommand() throws Exception {
		Path failing = script("failing", "echo 'k.cu(1): error: identifier \"x\" is undefined'\nexit 2\n");
		NvccCompiler nvcc = new NvccCompiler(List.of(failing));
		assertThatThrownBy(() -> nvcc.compile(failing, "k", SOURCE, List.of(), 75))
			.isInstanceOf(KernelCompilationException.class)
			.hasMessageContaining("Kernel 'k' could not be compiled")
			.hasMessageContaining("nvcc exited with status 2 (" + failing + " -fatbin -gencode=arch=compute_75,")
			.satisfies((ex) -> assertThat(((KernelCompilationException) ex).compilerLog())
				.contains("identifier \"x\" is undefined"));
	}

	@Test
	void aCompileThatExitsCleanlyWithoutAnImageIsAFailure() throws Exception {
		Path silent = script("silent", "exit 0\n");
		NvccCompiler nvcc = new NvccCompiler(List.of(silent));
		assertThatThrownBy(() -> nvcc.compile(silent, "k", SOURCE, List.of(), 75))
			.isInstanceOf(KernelCompilationException.class)
			.hasMessageContaining("nvcc exited with status 0");
	}

	@Test
	void architecturesAreAskedOnceAndParsed() throws Exception {
		Path fake = fakeNvcc("nvcc");
		NvccCompiler nvcc = new NvccCompiler(List.of(fake));
		assertThat(nvcc.archs(fake)).containsExactly(75, 80, 90);
		assertThat(nvcc.archs(fake)).containsExactly(75, 80, 90);
		assertThat(calls("nvcc")).hasSize(1);
		Path failing = script("failing", "echo compute_80\nexit 1\n");
		assertThat(new NvccCompiler(List.of(failing)).archs(failing)).as("a failed listing is no list").isEmpty();
	}

	@Test
	void parsesNvccsArchitectureList() {
		assertThat(NvccCompiler.parseArchs("compute_75 compute_80 compute_90 compute_100 compute_110 compute_103\n"))
			.containsExactly(75, 80, 90, 100, 103, 110);
		assertThat(NvccCompiler.parseArchs("sm_90 nothing else")).isEmpty();
	}

	@Test
	void gencodeAsksForMachineCodeAndPtx() {
		assertThat(NvccCompiler.gencode(86)).isEqualTo("-gencode=arch=compute_86,code=[sm_86,compute_86]");
	}

	@Test
	void theCompilerClampsTheDevicesArchitectureToWhatNvccLists() throws Exception {
		Path fake = fakeNvcc("nvcc");
		CudaCompiler compiler = new CudaCompiler(null, false, new NvccCompiler(List.of(fake)));
		assertThat(compiler.describe()).startsWith("nvcc (" + fake + "; NVRTC through JNA is disabled; NVRTC disabled)");
		CudaCompiler.Result result = compiler.compile("k", SOURCE, List.of(), 12, 0);
		assertThat(result.compiler()).isEqualTo("nvcc (" + fake + ")");
		assertThat(calls("nvcc")).as("trial compile, architecture list, compile").hasSize(3);
		assertThat(calls("nvcc").get(2)).contains("-gencode=arch=compute_90,code=[sm_90,compute_90]");
	}

}
