package dev.gpucompute.sample;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.function.Supplier;
import java.util.stream.IntStream;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The binary search API over real HTTP on the CPU backend: query vectors as little-endian float32
 * rows with {@code k} as a query parameter, answered as JSON by default and in the binary form
 * ({@code application/vnd.gpu-compute.hits}) when {@code Accept} asks for it; the same answers as the
 * JSON search, bit for bit, and a brute-force ranking; every bad input the problem detail the JSON
 * search gives for it, with nothing left behind.
 */
class BinarySearchApiTests extends RunningAppFixture {

	private static final String HITS = "application/vnd.gpu-compute.hits";

	private static final String OCTETS = "application/octet-stream";

	@ParameterizedTest
	@ValueSource(strings = { "cosine", "dot" })
	void binaryQueriesAnswerLikeTheJsonSearchInBothForms(String metric) {
		int dimension = 20;
		int size = 400;
		Random random = new Random(metric.hashCode() + 1);
		float[][] vectors = BruteForce.randomVectors(random, size, dimension);
		// Ids of several UTF-8 lengths: the binary answer's offsets must hold them.
		List<String> ids = IntStream.range(0, size).mapToObj((i) -> (i % 3 == 0) ? "dok-ü-" + i : "d" + i).toList();
		this.http.putJson("/collections/bin", "{\"dimension\": 20, \"metric\": \"" + metric + "\"}");
		assertThat(this.http.postJson("/collections/bin/vectors", Map.of("ids", ids, "vectors", vectors)).status())
			.isEqualTo(200);
		for (int queryCount : new int[] { 1, 9, 15 }) {
			float[][] queries = BruteForce.randomVectors(random, queryCount, dimension);
			byte[] body = Http.littleEndian(queries);
			for (int k : new int[] { 1, 10, 129 }) {
				String shape = metric + ", " + queryCount + " queries, k=" + k;
				Http.Response json = this.http.postJson("/collections/bin/search", Map.of("vectors", queries, "k", k));
				assertThat(json.status()).as(json.body()).isEqualTo(200);
				List<Http.Hits> expected = Http.Hits.of(json.json());
				// Binary in, JSON out (the default): the same answer.
				Http.Response binaryJson = this.http.post("/collections/bin/search?k=" + k, OCTETS, body);
				assertThat(binaryJson.status()).as(binaryJson.body()).isEqualTo(200);
				assertThat(binaryJson.contentType()).startsWith("application/json");
				assertSame(Http.Hits.of(binaryJson.json()), expected, shape + ", binary in, JSON out");
				// Binary in, binary out.
				Http.BinaryResponse binary = this.http.postForBytes("/collections/bin/search?k=" + k, OCTETS, body,
						"Accept", HITS);
				assertThat(binary.status()).isEqualTo(200);
				assertThat(binary.contentType()).isEqualTo(HITS);
				assertSame(Http.Hits.ofBinary(binary.body()), expected, shape + ", binary in and out");
				// JSON in, binary out.
				Http.BinaryResponse jsonBinary = this.http.postForBytes("/collections/bin/search", "application/json",
						Http.JSON.writeValueAsBytes(Map.of("vectors", queries, "k", k)), "Accept", HITS);
				assertSame(Http.Hits.ofBinary(jsonBinary.body()), expected, shape + ", JSON in, binary out");
				for (int q = 0; q < queryCount; q++) {
					BruteForce.assertSameResults(expected.get(q).ids(), expected.get(q).scores(),
							BruteForce.ranking(ids, vectors, queries[q], metric.equals("cosine")), k, shape + ", query " + q);
				}
			}
		}
		// Content negotiation: the binary form where it is preferred, JSON for */* and where JSON is preferred.
		byte[] one = Http.littleEndian(BruteForce.randomVectors(random, 1, dimension));
		assertThat(this.http.postForBytes("/collections/bin/search?k=3", OCTETS, one, "Accept",
				"application/json;q=0.5, " + HITS).contentType()).isEqualTo(HITS);
		assertThat(this.http.postForBytes("/collections/bin/search?k=3", OCTETS, one, "Accept", "*/*").contentType())
			.startsWith("application/json");
		assertThat(this.http.postForBytes("/collections/bin/search?k=3", OCTETS, one, "Accept",
				"application/json, " + HITS + ";q=0.9").contentType()).startsWith("application/json");
		awaitIdle();
	}

	@Test
	void theBinaryAnswerIsCompactAndLaidOutAsDocumented() {
		this.http.putJson("/collections/layout", "{\"dimension\": 2, \"metric\": \"dot\"}");
		this.http.postJson("/collections/layout/vectors", "{\"ids\":[\"a\",\"bb\",\"ccc\"],\"vectors\":[[1,0],[0,2],[3,3]]}");
		byte[] queries = littleEndian(1, 0, 0, 1);
		Http.BinaryResponse response = this.http.postForBytes("/collections/layout/search?k=2", OCTETS, queries, "Accept",
				HITS);
		ByteBuffer expected = ByteBuffer.allocate(8 + 4 * 4 + 4 * 5 + 9).order(ByteOrder.LITTLE_ENDIAN);
		expected.putInt(2).putInt(2);
		expected.putFloat(3).putFloat(1).putFloat(3).putFloat(2);
		expected.putInt(0).putInt(3).putInt(4).putInt(7).putInt(9);
		expected.put("cccaccc".getBytes()).put("bb".getBytes());
		assertThat(response.body()).isEqualTo(expected.array());
	}

	@Test
	void everyBadBinaryQueryGetsTheJsonSearchsProblemAndLeaksNothing() {
		this.http.putJson("/collections/bad", "{\"dimension\": 4, \"metric\": \"cosine\"}");
		this.http.postJson("/collections/bad/vectors",
				"{\"ids\": [\"a\", \"b\", \"c\"], \"vectors\": [[1,0,0,0],[0,1,0,0],[0,0,1,0]]}");
		String search = "/collections/bad/search";
		byte[] row = littleEndian(1, 2, 3, 4);

		assertProblem(() -> post("/collections/nope/search?k=1", row), 404, "unknown-collection", null);
		// Wrong length: not a whole number of rows of dimension 4, and no rows at all.
		assertProblem(() -> post(search + "?k=1", new byte[12]), 400, "wrong-dimension", null);
		assertProblem(() -> post(search + "?k=1", new byte[18]), 400, "wrong-dimension", null);
		assertProblem(() -> post(search + "?k=1", new byte[0]), 400, "invalid-request", "vectors");
		// Non-finite values, at the row and position the JSON search names.
		assertProblem(() -> post(search + "?k=1", littleEndian(1, 0, 0, 0, 1, Float.NaN, 0, 0)), 400, "non-finite-value",
				"vectors[1][1]");
		assertProblem(() -> post(search + "?k=1", littleEndian(Float.POSITIVE_INFINITY, 0, 0, 0)), 400,
				"non-finite-value", "vectors[0][0]");
		assertProblem(() -> post(search + "?k=1", littleEndian(0, 0, 0, Float.NEGATIVE_INFINITY)), 400,
				"non-finite-value", "vectors[0][3]");
		// k: out of 1..size, missing, not an integer, given twice; other parameters.
		for (String k : new String[] { "0", "-1", "4", "2147483647" }) {
			assertProblem(() -> post(search + "?k=" + k, row), 400, "k-out-of-range", null);
		}
		assertProblem(() -> post(search, row), 400, "invalid-request", "k");
		for (String k : new String[] { "1.5", "abc", "", "99999999999" }) {
			assertProblem(() -> post(search + "?k=" + k, row), 400, "invalid-request", "k");
		}
		assertProblem(() -> post(search + "?k=1&k=2", row), 400, "invalid-request", "k");
		assertProblem(() -> post(search + "?k=1&K=2", row), 400, "invalid-request", "K");
		// A zero vector has no direction for cosine; too many queries or results; too large a body.
		assertProblem(() -> post(search + "?k=1", new byte[16]), 400, "invalid-request", "vectors[0]");
		assertProblem(() -> post(search + "?k=1", new byte[16 * 51]), 400, "invalid-request", "vectors");
		this.http.putJson("/collections/many", "{\"dimension\": 1, \"metric\": \"dot\"}");
		this.http.post("/collections/many/vectors?idPrefix=m", OCTETS, new byte[4 * 1000]);
		assertProblem(() -> post("/collections/many/search?k=700", littleEndian(1, 2, 3)), 400, "too-many-results", null);
		byte[] large = new byte[(1 << 20) + 16];
		assertProblem(() -> post(search + "?k=1", large), 413, "body-too-large", null);
		assertProblem(() -> {
			Http.Response chunked = this.http.postChunked(search + "?k=1", OCTETS, large);
			return new Http.BinaryResponse(chunked.status(), chunked.contentType(), chunked.body().getBytes());
		}, 413, "body-too-large", null);
		// A client that accepts only the binary form still gets its problem detail as problem+json.
		assertProblem(() -> this.http.postForBytes(search + "?k=9", OCTETS, row, "Accept", HITS), 400, "k-out-of-range",
				null);
		// An answer nobody asked for in a form the service has: 406 in the service's format.
		Http.BinaryResponse csv = this.http.postForBytes(search + "?k=1", OCTETS, row, "Accept", "text/csv");
		assertThat(csv.status()).isEqualTo(406);
		assertThat(csv.json().get("type").asString()).isEqualTo("urn:gpu-compute:sample:problem:not-acceptable");

		// None of it changed the collection, and it still answers.
		assertThat(this.http.get("/collections/bad").json().get("size").asInt()).isEqualTo(3);
		Http.Response ok = this.http.post(search + "?k=3", OCTETS, littleEndian(0, 0.1f, 1, 0));
		assertThat(Http.Hits.of(ok.json()).get(0).ids()).containsExactly("c", "b", "a");
		awaitIdle();
	}

	@Test
	void aBodyOfNoWholeNumberOfRowsSaysWhetherItHoldsWholeValues() {
		this.http.putJson("/collections/partial", "{\"dimension\": 4, \"metric\": \"dot\"}");
		this.http.postJson("/collections/partial/vectors", "{\"ids\": [\"a\"], \"vectors\": [[1,0,0,0]]}");
		String rows = "collection 'partial' holds vectors of dimension 4 (16 bytes each)";
		for (String path : new String[] { "/collections/partial/search?k=1", "/collections/partial/vectors?ids=b" }) {
			JsonNode three = assertWrongLength(path, new byte[3]);
			assertThat(three.get("detail").asString())
				.isEqualTo("The body's 3 bytes are not a whole number of 4-byte float32 values; " + rows);
			assertThat(three.get("bytes").asLong()).isEqualTo(3);
			assertThat(three.has("actual")).isFalse();
			assertThat(assertWrongLength(path, new byte[1]).get("detail").asString())
				.isEqualTo("The body's 1 byte is not a whole number of 4-byte float32 values; " + rows);
			JsonNode twenty = assertWrongLength(path, new byte[20]);
			assertThat(twenty.get("detail").asString())
				.isEqualTo("The body's 20 bytes are 5 float32 values, not a whole number of vectors: " + rows);
			assertThat(twenty.get("actual").asLong()).isEqualTo(5);
		}
		assertThat(this.http.get("/collections/partial").json().get("size").asInt()).isEqualTo(1);
		awaitIdle();
	}

	/** A 400 wrong-dimension problem of field body and expected dimension 4: its JSON. */
	private JsonNode assertWrongLength(String path, byte[] body) {
		Http.BinaryResponse response = post(path, body);
		String text = new String(response.body());
		assertThat(response.status()).as(text).isEqualTo(400);
		JsonNode problem = response.json();
		assertThat(problem.get("type").asString()).as(text).isEqualTo("urn:gpu-compute:sample:problem:wrong-dimension");
		assertThat(problem.get("field").asString()).as(text).isEqualTo("body");
		assertThat(problem.get("expected").asInt()).as(text).isEqualTo(4);
		return problem;
	}

	private Http.BinaryResponse post(String path, byte[] body) {
		return this.http.postForBytes(path, OCTETS, body);
	}

	/** A problem detail with the given status and type (and field, when not null), and nothing leaked. */
	private void assertProblem(Supplier<Http.BinaryResponse> request, int status, String type, String field) {
		long buffersBefore = this.context.memory().liveBuffers();
		Http.BinaryResponse response = request.get();
		String text = new String(response.body());
		assertThat(response.status()).as(text).isEqualTo(status);
		assertThat(response.contentType()).as(text).startsWith("application/problem+json");
		JsonNode problem = response.json();
		assertThat(problem.get("type").asString()).as(text).isEqualTo("urn:gpu-compute:sample:problem:" + type);
		assertThat(problem.get("detail").asString()).isNotBlank();
		assertThat(problem.get("instance").asString()).startsWith("/collections");
		if (field != null) {
			assertThat(problem.get("field").asString()).as(text).isEqualTo(field);
		}
		assertThat(this.context.streams().stats().active()).as("leased streams after " + type).isZero();
		assertThat(this.context.events().inUse()).as("events in use after " + type).isZero();
		assertThat(this.context.memory().liveBuffers()).as("device buffers after " + type).isEqualTo(buffersBefore);
	}

	private static void assertSame(List<Http.Hits> actual, List<Http.Hits> expected, String what) {
		assertThat(actual).as(what).hasSameSizeAs(expected);
		for (int q = 0; q < expected.size(); q++) {
			assertThat(actual.get(q).ids()).as(what + ", query " + q).isEqualTo(expected.get(q).ids());
			assertThat(actual.get(q).scores()).as(what + ", query " + q).isEqualTo(expected.get(q).scores());
		}
	}

	private static byte[] littleEndian(float... values) {
		ByteBuffer buffer = ByteBuffer.allocate(4 * values.length).order(ByteOrder.LITTLE_ENDIAN);
		for (float value : values) {
			buffer.putFloat(value);
		}
		return buffer.array();
	}

}
