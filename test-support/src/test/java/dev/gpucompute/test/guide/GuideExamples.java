package dev.gpucompute.test.guide;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

/** Inputs and independent reference results for the guide's examples (test code, not in the guide). */
final class GuideExamples {

	private GuideExamples() {
	}

	static float[] image(int width, int height, long seed) {
		SplittableRandom random = new SplittableRandom(seed);
		float[] image = new float[width * height];
		for (int i = 0; i < image.length; i++) {
			image[i] = (float) random.nextDouble();
		}
		return image;
	}

	static List<float[]> images(int count, int width, int height) {
		List<float[]> images = new ArrayList<>();
		for (int i = 0; i < count; i++) {
			images.add(image(width, height, 100 + i));
		}
		return images;
	}

	/** The 3x3 box blur by its definition: the mean of the 9 neighbours, edges clamped, summed row by row. */
	static float[] blurByDefinition(float[] image, int width, int height) {
		float[] out = new float[image.length];
		for (int y = 0; y < height; y++) {
			for (int x = 0; x < width; x++) {
				float sum = 0.0f;
				for (int ny = y - 1; ny <= y + 1; ny++) {
					for (int nx = x - 1; nx <= x + 1; nx++) {
						sum += image[Math.min(Math.max(ny, 0), height - 1) * width + Math.min(Math.max(nx, 0), width - 1)];
					}
				}
				out[y * width + x] = sum / 9.0f;
			}
		}
		return out;
	}

	/** What the brighten kernel computes, by its definition. */
	static float[] brightened(float[] pixels, float gain) {
		float[] expected = new float[pixels.length];
		for (int i = 0; i < pixels.length; i++) {
			expected[i] = Math.min(pixels[i] * gain, 1.0f);
		}
		return expected;
	}

	static double sum(float[] values) {
		double sum = 0;
		for (float value : values) {
			sum += value;
		}
		return sum;
	}

}
