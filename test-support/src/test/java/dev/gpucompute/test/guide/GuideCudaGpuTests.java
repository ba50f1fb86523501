package dev.gpucompute.test.guide;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

import dev.gpucompute.Backend;
import dev.gpucompute.DeviceBuffer;
import dev.gpucompute.Dim3;
import dev.gpucompute.ElementType;
import dev.gpucompute.GpuContext;
import dev.gpucompute.HostArray;
import dev.gpucompute.KernelSource;
import dev.gpucompute.LaunchConfig;
import dev.gpucompute.autoconfigure.GpuAutoConfiguration;
import dev.gpucompute.test.GpuLeakCheck;
import dev.gpucompute.test.KernelParity;
import dev.gpucompute.test.ParityBuffer;
import dev.gpucompute.test.RequiresCuda;
import dev.gpucompute.test.Tolerance;

/**
 * The guide's examples on CUDA, each against the same example on the CPU backend, bit for bit: the
 * claim of the guide is that each CPU body does the CUDA body's arithmetic in its order. Run by the GPU
 * check; skipped here with the reason (no device).
 */
@RequiresCuda
@GpuLeakCheck
class GuideCudaGpuTests {

	private GpuContext cuda;

	private GpuContext cpu;

	@BeforeEach
	void open() {
		this.cuda = GpuContext.builder().backend(Backend.CUDA).open();
		this.cpu = GpuContext.builder().backend(Backend.CPU).open();
	}

	@AfterEach
	void close() {
		this.cuda.close();
		this.cpu.close();
	}

	@Test
	void kernelsWrittenOnceAgreeExactly() {
		int n = 100_003;
		KernelParity.of(Saxpy.SAXPY).launch(dev.gpucompute.LaunchConfig.linear(n, 256))
			.args(n, 2.5f, dev.gpucompute.test.ParityBuffer.randomFloats(n),
					dev.gpucompute.test.ParityBuffer.randomFloats(n).compared())
			.check();
		KernelParity.of(Clamp.CLAMP).launch(dev.gpucompute.LaunchConfig.linear(n, 256))
			.args(n, -0.5f, 0.5f, dev.gpucompute.test.ParityBuffer.randomFloats(n),
					dev.gpucompute.test.ParityBuffer.output(dev.gpucompute.ElementType.FLOAT, n),
					dev.gpucompute.test.ParityBuffer.output(dev.gpucompute.ElementType.INT, n))
			.check();
		KernelParity.of(Norm.NORM)
			.args(n, dev.gpucompute.test.ParityBuffer.randomFloats(n),
					dev.gpucompute.test.ParityBuffer.output(dev.gpucompute.ElementType.FLOAT, 1))
			.check();
		KernelParity.of(RowTotals.ROW_TOTALS)
			.args(300 * 1000, 1000, 0.5f, dev.gpucompute.test.ParityBuffer.randomFloats(300 * 1000),
					dev.gpucompute.test.ParityBuffer.output(dev.gpucompute.ElementType.FLOAT, 300))
			.check();
	}

	@Test
	void blurBodiesAgreeExactly() {
		for (int[] size : new int[][] { { 37, 23 }, { 16, 16 }, { 1, 1 }, { 1000, 3 } }) {
			int n = size[0] * size[1];
			KernelParity.of(Blur.BLUR)
				.launch(Blur.launchFor(size[0], size[1]))
				.args(size[0], size[1], ParityBuffer.randomFloats(n, 0f, 1f), ParityBuffer.output(ElementType.FLOAT, n))
				.tolerance(Tolerance.exact())
				.check(this.cuda, this.cpu);
		}
	}

	@Test
	void blockSumBodiesAgreeExactlyInBothPasses() {
		int n = 300_000;
		int blocks = BlockSum.blocks(n);
		LaunchConfig shared = LaunchConfig.of(Dim3.of(blocks), Dim3.of(BlockSum.THREADS)).withSharedMemory(4 * BlockSum.THREADS);
		KernelParity.of(BlockSum.SUM).launch(shared)
			.args(n, ParityBuffer.randomFloats(n), ParityBuffer.output(ElementType.FLOAT, blocks))
			.check(this.cuda, this.cpu);
		KernelParity.of(BlockSum.SUM).launch(LaunchConfig.of(Dim3.of(1), Dim3.of(BlockSum.THREADS)).withSharedMemory(1024))
			.args(blocks, ParityBuffer.randomFloats(blocks, -1000f, 1000f), ParityBuffer.output(ElementType.FLOAT, 1))
			.check(this.cuda, this.cpu);
		for (int length : new int[] { 0, 1, 257, 65_553, n }) {
			float[] values = GuideExamples.image(length, 1, length);
			assertThat(sum(this.cuda, values)).as("n = %d", length).isEqualTo(sum(this.cpu, values));
		}
	}

	private static float sum(GpuContext context, float[] values) {
		try (DeviceBuffer data = context.launcher().upload(HostArray.of(values))) {
			return BlockSum.sum(context.launcher(), data, values.length);
		}
	}

	@Test
	void thresholdAndBrightenBodiesAgreeExactly() {
		int n = 10_000;
		KernelParity.of(ImagePipeline.THRESHOLD).launch(LaunchConfig.linear(n, 256))
			.args(n, 0.5f, ParityBuffer.randomFloats(n, 0f, 1f), ParityBuffer.output(ElementType.FLOAT, n))
			.check(this.cuda, this.cpu);
		KernelSource brighten = new BrightenKernels().brighten().cudaResource("guide/kernels/brighten.cu");
		KernelParity.of(brighten).launch(LaunchConfig.linear(n, 256))
			.args(n, 1.7f, ParityBuffer.randomFloats(n, 0f, 1f), ParityBuffer.output(ElementType.FLOAT, n))
			.check(this.cuda, this.cpu);
	}

	@Test
	void pipelineAndBatchGiveTheCpuBackendsBits() {
		List<float[]> frames = GuideExamples.images(4, 64, 48);
		List<ImagePipeline.Result> onCuda = ImagePipeline.process(this.cuda, frames, 64, 48, 0.5f);
		List<ImagePipeline.Result> onCpu = ImagePipeline.process(this.cpu, frames, 64, 48, 0.5f);
		for (int f = 0; f < frames.size(); f++) {
			assertThat(onCuda.get(f).mask()).containsExactly(onCpu.get(f).mask());
			assertThat(onCuda.get(f).mean()).isEqualTo(onCpu.get(f).mean());
		}
		List<float[]> batchCuda = BatchBlur.blurAll(this.cuda.launcher(), frames, 64, 48);
		for (int i = 0; i < frames.size(); i++) {
			assertThat(batchCuda.get(i)).containsExactly(GuideExamples.blurByDefinition(frames.get(i), 64, 48));
		}
	}

	@Test
	void iterativeBlurAsAGraphGivesTheCpuBackendsBits() {
		float[] image = GuideExamples.image(64, 48, 7);
		try (IterativeBlur onCuda = new IterativeBlur(this.cuda, 64, 48, 10);
				IterativeBlur onCpu = new IterativeBlur(this.cpu, 64, 48, 10)) {
			assertThat(onCuda.operations()).isEqualTo(onCpu.operations());
			assertThat(onCuda.blur(image)).containsExactly(onCpu.blur(image));
		}
	}

	@Test
	void jcudaMemsetOnThePooledStreamThenBlur() {
		float[] grey = JCudaInterop.greyThenBlur(this.cuda, 40, 30, 0.25f);
		for (float pixel : grey) {
			assertThat(pixel).isEqualTo(0.25f); // nine 0.25s add up to 2.25 exactly, and 2.25 / 9 = 0.25
		}
	}

	@Test
	void kernelFileAndBeanOnCuda() {
		new ApplicationContextRunner().withConfiguration(AutoConfigurations.of(GpuAutoConfiguration.class))
			.withUserConfiguration(BrightenKernels.class, BrightenService.class)
			.withPropertyValues("gpu.backend=cuda", "gpu.kernels.locations=classpath:guide/kernels/")
			.run((context) -> {
				assertThat(context).hasNotFailed();
				float[] pixels = GuideExamples.image(5000, 1, 3);
				assertThat(context.getBean(BrightenService.class).brighten(pixels, 1.7f))
					.containsExactly(GuideExamples.brightened(pixels, 1.7f));
			});
	}

}
