package dev.gpucompute.kernels;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import dev.gpucompute.CpuKernel;
import dev.gpucompute.KernelSource;
import dev.gpucompute.KernelSource.CudaForm;
import dev.gpucompute.ParamType;
import dev.gpucompute.kernels.KernelDefinitionException.Kind;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;

/**
 * Tests for {@link KernelFiles}: a directory of kernel files, their {@code .params} files and the
 * prebuilt code beside a {@code .cu} become kernel definitions, paired with sources given in code;
 * every way a definition can be incomplete or contradictory is its own kind of error.
 */
class KernelFilesTests {

	private static final String SAXPY = "extern \"C\" __global__ void saxpy(int n, float a, const float* x, float* y) {}\n";

	private static final String PTX = ".version 8.0\n.target sm_80\n.visible .entry scale(.param .u32 n) { ret; }\n";

	private static final CpuKernel NOTHING = (block, args) -> {
	};

	@TempDir
	Path dir;

	@Test
	void aCudaSourceTakesItsParamsFromItsSignature() throws IOException {
		Path saxpy = write("saxpy.cu", SAXPY);
		List<KernelDefinition> kernels = KernelFiles.scan(this.dir).define();
		assertThat(kernels).hasSize(1);
		KernelDefinition definition = kernels.get(0);
		assertThat(definition.name()).isEqualTo("saxpy");
		assertThat(definition.origin()).isEqualTo(saxpy.toString());
		KernelSource source = definition.source();
		assertThat(source.params()).containsExactly(ParamType.INT, ParamType.FLOAT, ParamType.BUFFER, ParamType.BUFFER);
		assertThat(source.cudaForm()).isEqualTo(CudaForm.SOURCE);
		assertThat(source.cudaText()).isEqualTo(SAXPY);
		assertThat(source.cpu()).isNull();
	}

	@Test
	void directoriesAreSearchedRecursivelyAndParamsFilesAreSidecarsNotKernels() throws IOException {
		write("a/saxpy.cu", SAXPY);
		write("a/b/scale.ptx", PTX);
		write("a/b/scale.params", "# n, factor, data\nint, float, buffer\n");
		write("a/notes.txt", "not a kernel, not searched");
		KernelFiles files = KernelFiles.scan(this.dir);
		assertThat(files.names()).containsExactly("saxpy", "scale");
		KernelSource scale = files.define().get(1).source();
		assertThat(scale.cudaForm()).isEqualTo(CudaForm.PTX);
		assertThat(scale.params()).containsExactly(ParamType.INT, ParamType.FLOAT, ParamType.BUFFER);
	}

	@Test
	void oneFileIsALocationToo() throws IOException {
		Path scale = write("scale.ptx", PTX);
		write("scale.params", "int");
		write("saxpy.cu", SAXPY);
		assertThat(KernelFiles.scan(scale).names()).containsExactly("scale");
		assertThat(KernelFiles.scan(scale).define().get(0).source().params()).containsExactly(ParamType.INT);
	}

	@Test
	void anEmptyDirectoryHasNoKernels() throws IOException {
		assertThat(KernelFiles.scan(this.dir).isEmpty()).isTrue();
		assertThat(KernelFiles.scan(this.dir).define()).isEmpty();
	}

	@Test
	void ptxWithoutParamsSaysHowToDeclareThem() throws IOException {
		Path scale = write("scale.ptx", PTX);
		assertThatExceptionOfType(KernelDefinitionException.class).isThrownBy(() -> KernelFiles.scan(this.dir).define())
			.satisfies((ex) -> {
				assertThat(ex.kind()).isEqualTo(Kind.UNKNOWN_PARAMETER_TYPES);
				assertThat(ex.kernelName()).isEqualTo("scale");
				assertThat(ex.origin()).isEqualTo(scale.toString());
				assertThat(ex.problem()).contains("parameter types are unknown")
					.contains("add a file 'scale.params' beside it")
					.contains("or a KernelSource named 'scale' with .params(...)");
			});
	}

	@Test
	void aParamsFileWithAnUnknownTypeIsNamedAsTheOrigin() throws IOException {
		write("scale.ptx", PTX);
		Path params = write("scale.params", "int, pointer");
		assertThatExceptionOfType(KernelDefinitionException.class).isThrownBy(() -> KernelFiles.scan(this.dir).define())
			.satisfies((ex) -> {
				assertThat(ex.kind()).isEqualTo(Kind.INVALID_PARAMS_FILE);
				assertThat(ex.origin()).isEqualTo(params.toString());
				assertThat(ex.problem()).contains("'pointer' is not a parameter type");
			});
	}

	@Test
	void aFileNameThatIsNoCIdentifierGetsOneSuggested() throws IOException {
		write("my-kernel.cu", "extern \"C\" __global__ void my_kernel(int n) {}");
		assertThatExceptionOfType(KernelDefinitionException.class).isThrownBy(() -> KernelFiles.scan(this.dir).define())
			.satisfies((ex) -> {
				assertThat(ex.kind()).isEqualTo(Kind.INVALID_NAME);
				assertThat(ex.problem()).contains("not a kernel name");
				assertThat(ex.suggestion()).isEqualTo("my_kernel.cu");
			});
	}

	@Test
	void aSourceWithoutItsEntryPointNamesTheOneItDefines() throws IOException {
		write("mystery.cu", "extern \"C\" __global__ void something_else(int n) {}");
		assertThatExceptionOfType(KernelDefinitionException.class).isThrownBy(() -> KernelFiles.scan(this.dir).define())
			.satisfies((ex) -> {
				assertThat(ex.kind()).isEqualTo(Kind.MISSING_ENTRY_POINT);
				assertThat(ex.getMessage()).contains("'__global__ void mystery(...)'").contains("'something_else'");
				assertThat(ex.suggestion()).isEqualTo("something_else.cu");
			});
	}

	@Test
	void aParameterTheLauncherCannotPassIsRefused() throws IOException {
		write("half_scale.cu", "extern \"C\" __global__ void half_scale(int n, __half f, float* x) {}");
		assertThatExceptionOfType(KernelDefinitionException.class).isThrownBy(() -> KernelFiles.scan(this.dir).define())
			.satisfies((ex) -> {
				assertThat(ex.kind()).isEqualTo(Kind.UNSUPPORTED_PARAMETER_TYPE);
				assertThat(ex.getMessage()).contains("half_scale").contains("'__half'");
			});
	}

	@Test
	void aFileThatIsNoKernelFileIsRefusedEvenWithoutAnExtension() {
		for (String name : new String[] { "README.txt", "Makefile" }) {
			KernelFile file = KernelFile.of(this.dir.resolve(name));
			assertThatExceptionOfType(KernelDefinitionException.class).isThrownBy(() -> KernelFiles.of(List.of(file)))
				.satisfies((ex) -> {
					assertThat(ex.kind()).isEqualTo(Kind.NOT_A_KERNEL_FILE);
					assertThat(ex.problem()).contains("Not a kernel file").contains(name);
				});
		}
	}

	@Test
	void prebuiltCodeBesideACudaSourceIsItsAheadOfTimeBuildFatbinFirst() throws IOException {
		Path source = write("scale.cu", "extern \"C\" __global__ void scale(int n, float f, float* x) {}");
		write("scale.ptx", PTX);
		write("scale.cubin", "cubin stand-in");
		write("scale.fatbin", "fatbin stand-in");
		List<KernelDefinition> kernels = KernelFiles.scan(this.dir).define();
		assertThat(kernels).hasSize(1);
		assertThat(kernels.get(0).origin()).isEqualTo(source + " with prebuilt scale.fatbin");
		KernelSource scale = kernels.get(0).source();
		assertThat(scale.cudaForm()).isEqualTo(CudaForm.SOURCE);
		assertThat(scale.params()).containsExactly(ParamType.INT, ParamType.FLOAT, ParamType.BUFFER);
		assertThat(scale.prebuiltForm()).isEqualTo(CudaForm.FATBIN);
		assertThat(new String(scale.prebuiltCode(), StandardCharsets.UTF_8)).isEqualTo("fatbin stand-in");
	}

	@Test
	void withoutAFatbinACubinIsPreferredToPtx() throws IOException {
		write("scale.cu", "extern \"C\" __global__ void scale(int n) {}");
		write("scale.ptx", PTX);
		write("scale.cubin", "cubin stand-in");
		assertThat(KernelFiles.scan(this.dir).define().get(0).source().prebuiltForm()).isEqualTo(CudaForm.CUBIN);
	}

	@Test
	void prebuiltCodeInAnotherDirectoryIsASecondKernelFile() throws IOException {
		Path source = write("src/scale.cu", "extern \"C\" __global__ void scale(int n) {}");
		Path elsewhere = write("elsewhere/scale.ptx", PTX);
		assertThatExceptionOfType(KernelDefinitionException.class)
			.isThrownBy(() -> KernelFiles.scan(this.dir.resolve("src"), this.dir.resolve("elsewhere")))
			.satisfies((ex) -> {
				assertThat(ex.kind()).isEqualTo(Kind.DUPLICATE_FILES);
				assertThat(ex.origin()).isEqualTo(source + " and " + elsewhere);
				assertThat(ex.problem()).contains("defined by two kernel files");
			});
	}

	@Test
	void aFileFoundTwiceCountsOnce() throws IOException {
		Path saxpy = write("saxpy.cu", SAXPY);
		KernelFiles files = KernelFiles.scan(this.dir, saxpy, this.dir.resolve(".").resolve("saxpy.cu"));
		assertThat(files.names()).containsExactly("saxpy");
	}

	@Test
	void aSourceOfTheSameNameSuppliesParamsAndTheCpuImplementation() throws IOException {
		Path saxpy = write("saxpy.cu", SAXPY);
		KernelSource cpu = KernelSource.named("saxpy")
			.params(ParamType.INT, ParamType.FLOAT, ParamType.BUFFER, ParamType.BUFFER)
			.cpu(NOTHING);
		KernelDefinition definition = KernelFiles.scan(this.dir).define(List.of(cpu)).get(0);
		assertThat(definition.origin()).isEqualTo(saxpy + " with KernelSource 'saxpy'");
		assertThat(definition.source().cpu()).isSameAs(NOTHING);
		assertThat(definition.source().cudaText()).isEqualTo(SAXPY);
		assertThat(definition.source().params()).isEqualTo(cpu.params());
	}

	@Test
	void aSourceWithTheFilesCudaCodeIsAcceptedAndOneWithOtherCodeIsNot() throws IOException {
		write("saxpy.cu", SAXPY);
		KernelFiles files = KernelFiles.scan(this.dir);
		KernelSource same = KernelSource.named("saxpy").cuda(SAXPY).cpu(NOTHING);
		assertThat(files.define(List.of(same)).get(0).source()).isSameAs(same);
		KernelSource other = KernelSource.named("saxpy").cuda(SAXPY + "// changed\n");
		assertThatExceptionOfType(KernelDefinitionException.class).isThrownBy(() -> files.define(List.of(other)))
			.satisfies((ex) -> {
				assertThat(ex.kind()).isEqualTo(Kind.CUDA_CODE_CONTRADICTS_SOURCE);
				assertThat(ex.problem()).contains("CUDA code both in the KernelSource and in the file");
			});
	}

	@Test
	void aParamsFileThatContradictsTheSourceIsRefused() throws IOException {
		write("scale.ptx", PTX);
		write("scale.params", "int, float, buffer");
		KernelSource source = KernelSource.named("scale").params(ParamType.INT, ParamType.DOUBLE, ParamType.BUFFER);
		assertThatExceptionOfType(KernelDefinitionException.class)
			.isThrownBy(() -> KernelFiles.scan(this.dir).define(List.of(source)))
			.satisfies((ex) -> {
				assertThat(ex.kind()).isEqualTo(Kind.PARAMS_CONTRADICT_SOURCE);
				assertThat(ex.getMessage()).contains("[INT, FLOAT, BUFFER]").contains("[INT, DOUBLE, BUFFER]");
			});
	}

	@Test
	void sourcesWithoutAFileAreDefinedToo() throws IOException {
		write("saxpy.cu", SAXPY);
		KernelSource cpuOnly = KernelSource.named("double_it").params(ParamType.INT, ParamType.BUFFER).cpu(NOTHING);
		List<KernelDefinition> kernels = KernelFiles.scan(this.dir).define(List.of(cpuOnly));
		assertThat(kernels).extracting(KernelDefinition::name).containsExactly("double_it", "saxpy");
		assertThat(kernels.get(0).source()).isSameAs(cpuOnly);
		assertThat(kernels.get(0).origin()).isEqualTo("KernelSource 'double_it'");
	}

	@Test
	void twoSourcesOfOneNameAreRefused() throws IOException {
		KernelFiles none = KernelFiles.scan(this.dir);
		KernelSource one = KernelSource.named("twice");
		assertThatExceptionOfType(KernelDefinitionException.class)
			.isThrownBy(() -> none.define(List.of(one, KernelSource.named("twice"))))
			.satisfies((ex) -> {
				assertThat(ex.kind()).isEqualTo(Kind.DUPLICATE_SOURCES);
				assertThat(ex.origin()).isEqualTo("two KernelSources named 'twice'");
			});
	}

	@Test
	void sourcesKnownByIdentifiersAreNamedByThemInOriginsAndMessages() throws IOException {
		Path saxpy = write("saxpy.cu", SAXPY);
		KernelFiles files = KernelFiles.scan(this.dir);
		Map<String, KernelSource> beans = new LinkedHashMap<>();
		beans.put("saxpyKernel", KernelSource.named("saxpy").cpu(NOTHING));
		beans.put("doubler", KernelSource.named("double_it").cpu(NOTHING));
		List<KernelDefinition> kernels = files.define(beans, "bean");
		assertThat(kernels).extracting(KernelDefinition::origin)
			.containsExactly("bean 'doubler'", saxpy + " with bean 'saxpyKernel'");
		beans.put("other", KernelSource.named("saxpy"));
		assertThatExceptionOfType(KernelDefinitionException.class).isThrownBy(() -> files.define(beans, "bean"))
			.satisfies((ex) -> {
				assertThat(ex.kind()).isEqualTo(Kind.DUPLICATE_SOURCES);
				assertThat(ex.origin()).isEqualTo("beans 'saxpyKernel' and 'other'");
				assertThat(ex.problem()).isEqualTo("is defined by two KernelSource beans; kernel names must be unique");
			});
	}

	@Test
	void aMissingDirectorySuggestsTheNearestOneWithKernels() throws IOException {
		write("kernels/saxpy.cu", SAXPY);
		write("other/deep/er/scale.ptx", PTX);
		Files.createDirectories(this.dir.resolve("kernals-but-empty"));
		Path missing = this.dir.resolve("kernal");
		assertThatExceptionOfType(NoSuchFileException.class).isThrownBy(() -> KernelFiles.scan(missing))
			.satisfies((ex) -> {
				assertThat(ex.getFile()).isEqualTo(missing.toString());
				assertThat(ex.getReason()).startsWith("no such kernel directory or file (did you mean "
						+ this.dir.resolve("kernels") + "?); kernel files are in [" + this.dir.resolve("kernels") + ", "
						+ this.dir.resolve("other") + "]");
			});
	}

	@Test
	void aMissingKernelFileSuggestsTheNearestKernelFile() throws IOException {
		write("mixed.cu", "extern \"C\" __global__ void mixed(int n) {}");
		write("mixed.params", "int");
		Path missing = this.dir.resolve("mised.cu");
		assertThatExceptionOfType(NoSuchFileException.class).isThrownBy(() -> KernelFiles.scan(missing))
			.satisfies((ex) -> assertThat(ex.getReason()).contains("did you mean " + this.dir.resolve("mixed.cu") + "?"));
	}

	@Test
	void aMissingLocationFarFromAnyNameSuggestsNothing() {
		Path missing = this.dir.resolve("nowhere-near");
		assertThatExceptionOfType(NoSuchFileException.class).isThrownBy(() -> KernelFiles.scan(missing))
			.satisfies((ex) -> assertThat(ex.getReason()).isEqualTo("no such kernel directory or file"));
	}

	@Test
	void kernelFileNames() {
		assertThat(KernelFiles.isKernelFile("saxpy.cu")).isTrue();
		assertThat(KernelFiles.isKernelFile("SCALE.FATBIN")).isTrue();
		assertThat(KernelFiles.isKernelFile("scale.params")).isFalse();
		assertThat(KernelFiles.isKernelFile("cu")).isFalse();
		assertThat(KernelFiles.isParamsFile("scale.params")).isTrue();
		assertThat(KernelFiles.EXTENSIONS).containsExactly("cu", "ptx", "cubin", "fatbin");
	}

	private Path write(String name, String content) throws IOException {
		Path file = this.dir.resolve(name);
		Files.createDirectories(file.getParent());
		return Files.writeString(file, content);
	}

}
