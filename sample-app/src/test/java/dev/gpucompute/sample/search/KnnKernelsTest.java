package dev.gpucompute.sample.search;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.jupiter.api.Test;

import dev.gpucompute.KernelSource;
import dev.gpucompute.ParamType;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The Java declarations and the CUDA files agree: every kernel has a file named after it under
 * {@code gpu/kernels/}, defining an {@code extern "C"} entry point of that name whose parameters
 * have the declared types, in order. A mismatch would pass every CPU test and corrupt memory on a GPU.
 */
class KnnKernelsTest {

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
		assertThat(resource(KnnKernels.LOCATION + "knn_topk.cu")).contains("#define KNN_CHUNK " + KnnKernels.CHUNK,
				"#define KNN_NO_ID 0x7fffffff");
		assertThat(resource(KnnKernels.LOCATION + "knn_score.cu")).contains("#define KNN_LANES " + KnnKernels.LANES,
				"#define KNN_TILE_Q " + KnnKernels.TILE_Q, "#define KNN_TILE_V " + KnnKernels.TILE_V,
				"#define KNN_THREADS " + KnnKernels.SCORE_BLOCK);
		assertThat(resource(KnnKernels.LOCATION + "knn_fused.cu")).contains("#define KNN_LANES " + KnnKernels.LANES,
				"#define KNN_NO_ID 0x7fffffff", "#define KNN_THREADS " + KnnKernels.FUSED_BLOCK,
				"#define KNN_SCAN_MAX " + KnnKernels.SCAN_MAX, "#define KNN_BATCH_Q " + KnnKernels.BATCH_Q,
				"#define KNN_SCAN_TILE " + KnnKernels.SCAN_TILE, "#define KNN_BATCH_TILE " + KnnKernels.BATCH_TILE,
				"#define KNN_BATCH_DK " + KnnKernels.BATCH_DK, "#define KNN_FUSED_MAX_K " + KnnKernels.FUSED_MAX_K);
		assertThat(KnnKernels.NO_ID).isEqualTo(0x7fffffff);
		assertThat(KnnKernels.withCudaFromClasspath()).allSatisfy(
				(source) -> assertThat(source.cudaForm()).isEqualTo(KernelSource.CudaForm.SOURCE));
	}

	private static String resource(String name) throws IOException {
		try (InputStream in = KnnKernelsTest.class.getClassLoader().getResourceAsStream(name)) {
			assertThat(in).as(name).isNotNull();
			return new String(in.readAllBytes(), StandardCharsets.UTF_8);
		}
	}

}
