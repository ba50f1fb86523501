package dev.gpucompute.test.guide;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

import dev.gpucompute.Backend;
import dev.gpucompute.DeviceBuffer;
import dev.gpucompute.GpuContext;
import dev.gpucompute.HostArray;
import dev.gpucompute.autoconfigure.GpuAutoConfiguration;
import dev.gpucompute.test.GpuCpuBackend;
import dev.gpucompute.test.GpuLeakCheck;

/**
 * docs/guide.md, checked: every Java block of the guide is, character for character, a source file of
 * this package (less its package line) and every CUDA block a kernel file of {@code guide/kernels/},
 * so the guide shows code that compiles; and each example runs here, on the CPU backend, against an
 * independent reference, under the leak check. {@code GuideCudaGpuTests} runs them on CUDA.
 */
@GpuLeakCheck
class GuideTests {

	private static final Path GUIDE = Path.of("../docs/guide.md");

	private static final Path SOURCES = Path.of("src/test/java/dev/gpucompute/test/guide");

	private static final Path KERNELS = Path.of("src/test/resources/guide/kernels");

	/** Test code of this package, which the guide does not show. */
	private static final Set<String> NOT_IN_THE_GUIDE = Set.of("GuideTests.java", "GuideExamples.java",
			"GuideCudaGpuTests.java");

	private GpuContext gpu;

	@BeforeEach
	void open() {
		this.gpu = GpuContext.builder().backend(Backend.CPU).cpuThreads(2).open();
	}

	@AfterEach
	void close() {
		this.gpu.close();
	}

	@Test
	void theGuideShowsTheTestedSourcesExactly() throws IOException {
		String guide = Files.readString(GUIDE);
		Set<String> shown = new TreeSet<>();
		for (String block : blocks(guide, "java")) {
			Matcher type = Pattern.compile("(?m)^public (?:final )?(?:class|record|interface) (\\w+)").matcher(block);
			assertThat(type.find()).as("a public type in the block:%n%s", block).isTrue();
			String file = type.group(1) + ".java";
			String source = Files.readString(SOURCES.resolve(file)).replaceFirst("^package [\\w.]+;\\n\\n", "");
			assertThat(block + "\n").as("the guide's %s", file).isEqualTo(source);
			shown.add(file);
		}
		for (String block : blocks(guide, "cuda")) {
			Matcher kernel = Pattern.compile("__global__ void (\\w+)").matcher(block);
			assertThat(kernel.find()).as("a kernel in the block:%n%s", block).isTrue();
			String file = kernel.group(1) + ".cu";
			assertThat(block + "\n").as("the guide's %s", file).isEqualTo(Files.readString(KERNELS.resolve(file)));
			shown.add(file);
		}
		Set<String> files = new TreeSet<>();
		try (Stream<Path> sources = Stream.concat(Files.list(SOURCES), Files.list(KERNELS))) {
			sources.map((path) -> path.getFileName().toString()).filter((name) -> !NOT_IN_THE_GUIDE.contains(name))
				.forEach(files::add);
		}
		assertThat(shown).as("example files shown in the guide").isEqualTo(files);
	}

	private static List<String> blocks(String markdown, String language) {
		List<String> blocks = new ArrayList<>();
		Matcher matcher = Pattern.compile("```" + language + "\\n(.*?)\\n```", Pattern.DOTALL).matcher(markdown);
		while (matcher.find()) {
			blocks.add(matcher.group(1));
		}
		assertThat(blocks).as("```%s blocks in the guide", language).isNotEmpty();
		return blocks;
	}

	@Test
	void saxpyWrittenOnceIsJavasArithmetic() {
		float[] x = GuideExamples.image(1000, 1, 1);
		float[] y = GuideExamples.image(1000, 1, 2);
		float[] expected = new float[y.length];
		for (int i = 0; i < y.length; i++) {
			expected[i] = 2.5f * x[i] + y[i];
		}
		assertThat(Saxpy.saxpy(this.gpu.launcher(), 2.5f, x, y)).containsExactly(expected);
	}

	@Test
	void clampClampsAndCountsWithNanBecomingLo() {
		float[] x = { -2f, -0.5f, 0f, 0.5f, 2f, Float.NaN, Float.NEGATIVE_INFINITY };
		try (DeviceBuffer in = this.gpu.launcher().upload(HostArray.of(x));
				DeviceBuffer y = this.gpu.launcher().allocate(x.length, dev.gpucompute.ElementType.FLOAT);
				DeviceBuffer outside = this.gpu.launcher().allocate(x.length, dev.gpucompute.ElementType.INT)) {
			this.gpu.launcher().launch(Clamp.CLAMP, dev.gpucompute.LaunchConfig.linear(x.length, 256), x.length, -1f, 1f, in, y,
					outside);
			float[] clamped = new float[x.length];
			int[] flags = new int[x.length];
			y.download(HostArray.of(clamped)).join();
			outside.download(HostArray.of(flags)).join();
			assertThat(clamped).containsExactly(-1f, -0.5f, 0f, 0.5f, 1f, -1f, -1f);
			assertThat(flags).containsExactly(-1, 0, 0, 0, 1, 0, -1);
		}
	}

	@Test
	void normIsTheSquareRootOfTheSumOfSquares() {
		for (int n : new int[] { 0, 1, 4096, 100_003 }) {
			float[] x = GuideExamples.image(n, 1, n + 5);
			double squares = 0;
			for (float v : x) {
				squares += (double) v * v;
			}
			assertThat((double) Norm.norm(this.gpu.launcher(), x)).as("n = %d", n)
				.isCloseTo(Math.sqrt(squares), within(1e-6 * Math.max(1, Math.sqrt(squares))));
		}
	}

	@Test
	void rowTotalsSumEachRow() {
		int rows = 7;
		int columns = 1000;
		float[] matrix = GuideExamples.image(columns, rows, 9);
		float[] totals = RowTotals.totals(this.gpu.launcher(), matrix, rows, 0.5f);
		for (int r = 0; r < rows; r++) {
			double expected = 0;
			for (int c = 0; c < columns; c++) {
				expected += 0.5f * matrix[r * columns + c];
			}
			assertThat((double) totals[r]).as("row %d", r).isCloseTo(expected, within(1e-3));
		}
	}

	@Test
	void blurMatchesItsDefinitionBitForBit() {
		for (int[] size : new int[][] { { 37, 23 }, { 16, 16 }, { 1, 1 }, { 1, 40 } }) {
			float[] image = GuideExamples.image(size[0], size[1], 7);
			assertThat(Blur.blur(this.gpu.launcher(), image, size[0], size[1]))
				.as("%dx%d", size[0], size[1])
				.containsExactly(GuideExamples.blurByDefinition(image, size[0], size[1]));
		}
		assertThat(Blur.blur(this.gpu.launcher(), new float[0], 0, 5)).isEmpty();
	}

	@Test
	void iterativeBlurReplaysTheSameBitsAsLaunchingEachPass() {
		int width = 37;
		int height = 21;
		int passes = 6;
		try (IterativeBlur blur = new IterativeBlur(this.gpu, width, height, passes)) {
			assertThat(blur.operations()).isEqualTo(2 + 2 * passes);
			for (int seed = 1; seed <= 3; seed++) {
				float[] image = GuideExamples.image(width, height, seed);
				float[] expected = image;
				for (int step = 0; step < 2 * passes; step++) {
					expected = Blur.blur(this.gpu.launcher(), expected, width, height);
				}
				assertThat(blur.blur(image)).as("image %d", seed).containsExactly(expected);
			}
		}
	}

	@Test
	void blockSumAddsUpAnyLengthEmptyIncluded() {
		for (int n : new int[] { 0, 1, 255, 256, 257, 4096, 65_536 + 17, 300_000 }) {
			float[] values = GuideExamples.image(n, 1, n);
			try (DeviceBuffer data = this.gpu.launcher().upload(HostArray.of(values))) {
				float sum = BlockSum.sum(this.gpu.launcher(), data, n);
				assertThat((double) sum).as("n = %d", n).isCloseTo(GuideExamples.sum(values), within(1e-5 * Math.max(1, n)));
			}
		}
	}

	@Test
	void pipelineMasksAndMeansEachFrame() {
		int width = 40;
		int height = 30;
		List<float[]> frames = GuideExamples.images(3, width, height);
		List<ImagePipeline.Result> results = ImagePipeline.process(this.gpu, frames, width, height, 0.5f);
		assertThat(results).hasSize(3);
		for (int f = 0; f < frames.size(); f++) {
			float[] blurred = GuideExamples.blurByDefinition(frames.get(f), width, height);
			float[] mask = new float[blurred.length];
			for (int i = 0; i < blurred.length; i++) {
				mask[i] = (blurred[i] > 0.5f) ? 1f : 0f;
			}
			assertThat(results.get(f).mask()).as("mask of frame %d", f).containsExactly(mask);
			try (DeviceBuffer data = this.gpu.launcher().upload(HostArray.of(blurred))) {
				float sum = BlockSum.sum(this.gpu.launcher(), data, blurred.length);
				assertThat(results.get(f).mean()).as("mean of frame %d", f).isEqualTo(sum / blurred.length);
			}
			assertThat((double) results.get(f).mean()).isCloseTo(GuideExamples.sum(blurred) / blurred.length, within(1e-5));
		}
	}

	@Test
	void batchBlurGivesEachImageItsOwnBlur() {
		List<float[]> images = GuideExamples.images(5, 33, 17);
		List<float[]> blurred = BatchBlur.blurAll(this.gpu.launcher(), images, 33, 17);
		for (int i = 0; i < images.size(); i++) {
			assertThat(blurred.get(i)).containsExactly(GuideExamples.blurByDefinition(images.get(i), 33, 17));
		}
	}

	@Test
	void kernelBeanAndFileLoadAtStartUpAndRun() {
		new ApplicationContextRunner().withConfiguration(AutoConfigurations.of(GpuAutoConfiguration.class))
			.withUserConfiguration(BrightenKernels.class, BrightenService.class)
			.withPropertyValues(GpuCpuBackend.PROPERTY, "gpu.kernels.locations=classpath:guide/kernels/")
			.run((context) -> {
				assertThat(context).hasNotFailed();
				float[] pixels = GuideExamples.image(1000, 1, 3);
				assertThat(context.getBean(BrightenService.class).brighten(pixels, 1.7f))
					.containsExactly(GuideExamples.brightened(pixels, 1.7f));
			});
	}

	@Test
	void theInteropExampleNeedsCuda() {
		assertThatThrownBy(() -> JCudaInterop.greyThenBlur(this.gpu, 4, 4, 0.25f)).isInstanceOf(IllegalStateException.class)
			.hasMessageContaining("needs the CUDA backend, not CPU");
	}

}
