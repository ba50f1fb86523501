package dev.gpucompute.sample.web;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;

import tools.jackson.databind.json.JsonMapper;

import dev.gpucompute.sample.SampleProperties;
import dev.gpucompute.sample.search.Hit;

/**
 * Not a test: a benchmark main (run by {@code benchmarks/search-paths.sh --bodies}) for what a search's
 * bodies cost outside the kernels, in one JVM: reading 100 query vectors as JSON (the service's strict
 * mapper, as {@link RequestBodies} configures it) against reading them as little-endian float32, and
 * writing a 100 x 10 answer as JSON (Spring MVC's Jackson) against the binary form of
 * {@link HitsMessageConverter}. Prints milliseconds per request body and answer, per round.
 *
 * <pre>
 * java -cp ... dev.gpucompute.sample.web.SearchBodiesBench [dimension] [rounds]
 * </pre>
 */
public final class SearchBodiesBench {

	private SearchBodiesBench() {
	}

	public static void main(String[] args) throws Exception {
		int dim = (args.length > 0) ? Integer.parseInt(args[0]) : 384;
		int rounds = (args.length > 1) ? Integer.parseInt(args[1]) : 5;
		int queries = 100;
		int k = 10;
		Random random = new Random(1);
		float[][] vectors = new float[queries][dim];
		for (float[] row : vectors) {
			for (int j = 0; j < dim; j++) {
				row[j] = (float) (random.nextGaussian() / Math.sqrt(dim));
			}
		}
		JsonMapper plain = JsonMapper.builder().build();
		RequestBodies bodies = new RequestBodies(new SampleProperties(), plain);
		java.lang.reflect.Field field = RequestBodies.class.getDeclaredField("mapper");
		field.setAccessible(true);
		JsonMapper strict = (JsonMapper) field.get(bodies);
		byte[] json = plain.writeValueAsBytes(Map.of("vectors", vectors, "k", k));
		ByteBuffer binary = ByteBuffer.allocate(queries * dim * 4).order(ByteOrder.LITTLE_ENDIAN);
		for (float[] row : vectors) {
			for (float v : row) {
				binary.putFloat(v);
			}
		}
		List<List<Hit>> results = new ArrayList<>();
		for (int q = 0; q < queries; q++) {
			List<Hit> hits = new ArrayList<>();
			for (int r = 0; r < k; r++) {
				hits.add(new Hit("doc-" + random.nextInt(1_000_000), random.nextFloat()));
			}
			results.add(hits);
		}
		CollectionsController.SearchResponse answer = new CollectionsController.SearchResponse(results);
		System.out.printf("100 queries of dimension %d: request %,d bytes as JSON, %,d as float32; answer (k = 10) %,d bytes"
				+ " as JSON, %,d in the binary form%n", dim, json.length, binary.capacity(),
				plain.writeValueAsBytes(answer).length, HitsMessageConverter.encode(results).length);
		float[] flat = new float[queries * dim];
		for (int round = 0; round < rounds; round++) {
			double readJson = time(() -> strict.readValue(json, CollectionsController.SearchRequest.class));
			double readBinary = time(() -> binary.duplicate().order(ByteOrder.LITTLE_ENDIAN).rewind().asFloatBuffer().get(flat));
			double writeJson = time(() -> plain.writeValueAsBytes(answer));
			double writeBinary = time(() -> HitsMessageConverter.encode(results));
			System.out.printf("round %d: read JSON %.3f ms, float32 %.3f ms; write JSON %.3f ms, binary %.3f ms%n", round,
					readJson, readBinary, writeJson, writeBinary);
		}
	}

	/** Milliseconds per call, calling for one second. */
	private static double time(Runnable call) {
		long start = System.nanoTime();
		int calls = 0;
		while (System.nanoTime() - start < 1_000_000_000L) {
			call.run();
			calls++;
		}
		return (System.nanoTime() - start) / 1e6 / calls;
	}

}
