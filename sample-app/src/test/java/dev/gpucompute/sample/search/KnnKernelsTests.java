package dev.gpucompute.sample.search;

import java.io.IOException;
import java.io.InputStream;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.jupiter.api.Test;

import dev.gpucompute.DeviceBuffer;
import dev.gpucompute.GpuStream;
import dev.gpucompute.KernelSource;
import dev.gpucompute.LaunchConfig;
import dev.gpucompute.ParamType;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The Java declarations and the CUDA files agree: every kernel has a file named after it under
 * {@code gpu/kernels/}, defining an {@code extern "C"} entry point of that name whose parameters
 * have the declared types, in order, and whose entry point is the signature written next to the Java
 * declaration; the typed launches take those parameters in that order. A mismatch would pass every
 * CPU test and corrupt memory on a GPU.
 */
class KnnKernelsTests {

	private static final Pattern QUALIFIERS = Pattern.compile("\\b(const|__restrict__)\\b");

	@Test
	void declaredParametersMatchTheCudaSignatures() throws IOException {
		for (KernelSource source : KnnKernels.ALL) {
			// __launch_bounds__ goes between the return type and the name; the starter's parser drops it too.
			String code = resource(KnnKernels.LOCATION + source.name() + ".cu").replaceAll("__launch_bounds__\\([^)]*\\)\\s*", "");
			Matcher signature = Pattern
				.compile("extern \"C\" __global__ void " + source.name() + "\\(([^)]*)\\)", Pattern.DOTALL)
				.matcher(code);
			assertThat(signature.find()).as(source.name() + " has an extern \"C\" entry point").isTrue();
			List<ParamType> types = new ArrayList<>();
			for (String parameter : signature.group(1).split(",")) {
				String text = QUALIFIERS.matcher(parameter).replaceAll(" ").replaceAll("\\s+", " ").strip();
				String type = text.substring(0, text.lastIndexOf(' ')).strip();
				types.add(switch (type) {
					case "int" -> ParamType.INT;
					case "long long" -> ParamType.LONG;
					case "float" -> ParamType.FLOAT;
					case "float*", "int*" -> ParamType.BUFFER;
					default -> throw new AssertionError(source.name() + ": unexpected parameter type " + type);
				});
			}
			assertThat(types).as(source.name()).isEqualTo(source.params());
			assertThat(source.cpu()).as(source.name() + " has a CPU implementation").isNotNull();
			assertThat(source.cudaForm()).as(source.name() + " takes its CUDA code from the file").isNull();
		}
	}

	@Test
	void theCudaConstantsMatchTheJavaTwins() throws IOException {
		assertThat(resource(KnnKernels.LOCATION + "knn_topk.cu")).contains("#define KNN_CHUNK " + KnnGeometry.CHUNK,
				"#define KNN_NO_ID 0x7fffffff");
		assertThat(resource(KnnKernels.LOCATION + "knn_score.cu")).contains("#define KNN_LANES " + KnnGeometry.LANES,
				"#define KNN_TILE_Q " + KnnGeometry.TILE_Q, "#define KNN_TILE_V " + KnnGeometry.TILE_V,
				"#define KNN_THREADS " + KnnGeometry.SCORE_BLOCK);
		assertThat(resource(KnnKernels.LOCATION + "knn_fused.cu")).contains("#define KNN_LANES " + KnnGeometry.LANES,
				"#define KNN_NO_ID 0x7fffffff", "#define KNN_THREADS " + KnnGeometry.FUSED_BLOCK,
				"#define KNN_SCAN_MAX " + KnnGeometry.SCAN_MAX, "#define KNN_BATCH_Q " + KnnGeometry.BATCH_Q,
				"#define KNN_SCAN_TILE " + KnnGeometry.SCAN_TILE, "#define KNN_BATCH_TILE " + KnnGeometry.BATCH_TILE,
				"#define KNN_BATCH_DK " + KnnGeometry.BATCH_DK, "#define KNN_FUSED_MAX_K " + KnnGeometry.FUSED_MAX_K);
		assertThat(KnnKernels.NO_ID).isEqualTo(0x7fffffff);
		assertThat(KnnKernels.withCudaFromClasspath()).allSatisfy(
				(source) -> assertThat(source.cudaForm()).isEqualTo(KernelSource.CudaForm.SOURCE));
	}

	@Test
	void theSignaturesNextToTheDeclarationsAreTheEntryPointsOfTheCudaFiles() throws IOException {
		Map<KernelSource, String> signatures = Map.of(KnnKernels.SCORE, KnnKernels.SCORE_SIGNATURE, KnnKernels.TOPK,
				KnnKernels.TOPK_SIGNATURE, KnnKernels.SORT_INIT, KnnKernels.SORT_INIT_SIGNATURE, KnnKernels.BITONIC_STEP,
				KnnKernels.BITONIC_STEP_SIGNATURE, KnnKernels.SCATTER, KnnKernels.SCATTER_SIGNATURE, KnnKernels.FUSED,
				KnnKernels.FUSED_SIGNATURE, KnnKernels.MERGE, KnnKernels.MERGE_SIGNATURE);
		assertThat(signatures.keySet()).as("a signature for every kernel").containsExactlyInAnyOrderElementsOf(KnnKernels.ALL);
		for (KernelSource source : KnnKernels.ALL) {
			// As written in the file, without comments, __launch_bounds__ and __restrict__, spaces collapsed.
			String code = resource(KnnKernels.LOCATION + source.name() + ".cu").replaceAll("(?s)//[^\\n]*|/\\*.*?\\*/", " ")
				.replaceAll("__launch_bounds__\\([^)]*\\)", " ")
				.replace("__restrict__", " ")
				.replaceAll("\\s+", " ")
				.replace(" ,", ",")
				.replace("( ", "(")
				.replace(" )", ")");
			Matcher entry = Pattern.compile("extern \"C\" __global__ void " + source.name() + "\\([^)]*\\)").matcher(code);
			assertThat(entry.find()).as(source.name() + " has an extern \"C\" entry point").isTrue();
			assertThat(signatures.get(source)).as(source.name()).isEqualTo(entry.group());
		}
	}

	@Test
	void eachTypedLaunchTakesItsKernelsParametersInOrder() {
		for (KernelSource source : KnnKernels.ALL) {
			String name = camelCase(source.name().substring("knn_".length()));
			List<Method> launches = Arrays.stream(KnnLaunches.class.getDeclaredMethods())
				.filter((method) -> method.getName().equals(name))
				.toList();
			assertThat(launches).as("one launch method for " + source.name()).hasSize(1);
			List<Class<?>> expected = new ArrayList<>(List.of(GpuStream.class, LaunchConfig.class));
			for (ParamType type : source.params()) {
				expected.add(switch (type) {
					case INT -> int.class;
					case LONG -> long.class;
					case BUFFER -> DeviceBuffer.class;
					default -> throw new AssertionError(source.name() + ": no Java type for " + type);
				});
			}
			assertThat(launches.get(0).getParameterTypes()).as(source.name()).containsExactlyElementsOf(expected);
		}
	}

	private static String camelCase(String snake) {
		StringBuilder camel = new StringBuilder();
		for (String part : snake.split("_")) {
			camel.append(camel.isEmpty() ? part : Character.toUpperCase(part.charAt(0)) + part.substring(1));
		}
		return camel.toString();
	}

	private static String resource(String name) throws IOException {
		try (InputStream in = KnnKernelsTests.class.getClassLoader().getResourceAsStream(name)) {
			assertThat(in).as(name).isNotNull();
			return new String(in.readAllBytes(), StandardCharsets.UTF_8);
		}
	}

}
