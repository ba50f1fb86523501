package dev.gpucompute.sample;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.function.Supplier;
import java.util.stream.IntStream;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import tools.jackson.databind.JsonNode;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The REST API over real HTTP on the CPU backend: the happy paths against a brute-force reference,
 * and every bad input answered as a problem detail with the stream pool back to idle, no event in
 * use and no device buffer left behind.
 */
class SearchApiTests extends RunningAppFixture {

	@Test
	void collectionLifecycle() {
		Http.Response created = this.http.putJson("/collections/docs", "{\"dimension\": 384, \"metric\": \"cosine\"}");
		assertThat(created.status()).isEqualTo(201);
		assertThat(created.json().get("name").asString()).isEqualTo("docs");
		assertThat(created.json().get("size").asInt()).isZero();
		assertThat(this.http.putJson("/collections/docs", "{\"dimension\": 384, \"metric\": \"cosine\"}").status())
			.isEqualTo(200);
		assertProblem(() -> this.http.putJson("/collections/docs", "{\"dimension\": 128, \"metric\": \"cosine\"}"), 409,
				"collection-conflict");
		assertProblem(() -> this.http.putJson("/collections/docs", "{\"dimension\": 384, \"metric\": \"dot\"}"), 409,
				"collection-conflict");
		assertThat(this.http.putJson("/collections/other", "{\"dimension\": 3, \"metric\": \"dot\"}").status())
			.isEqualTo(201);
		JsonNode list = this.http.get("/collections").json();
		assertThat(list.size()).isEqualTo(2);
		assertThat(list.get(0).toString()).isEqualTo("{\"name\":\"docs\",\"dimension\":384,\"metric\":\"cosine\",\"size\":0,\"devices\":[]}");
		assertThat(list.get(1).toString()).isEqualTo("{\"name\":\"other\",\"dimension\":3,\"metric\":\"dot\",\"size\":0,\"devices\":[]}");
		assertThat(this.http.get("/collections/other").json().get("metric").asString()).isEqualTo("dot");
		assertThat(this.http.delete("/collections/other").status()).isEqualTo(204);
		assertProblem(() -> this.http.get("/collections/other"), 404, "unknown-collection");
		assertProblem(() -> this.http.delete("/collections/other"), 404, "unknown-collection");
		assertThat(Files.exists(DATA.resolve("other.vec"))).isFalse();
		assertThat(Files.exists(DATA.resolve("docs.vec"))).isTrue();
	}

	@ParameterizedTest
	@ValueSource(strings = { "cosine", "dot" })
	void jsonAndBinaryUploadsSearchLikeBruteForce(String metric) {
		int dimension = 24;
		int size = 300;
		Random random = new Random(metric.hashCode());
		float[][] vectors = BruteForce.randomVectors(random, size, dimension);
		List<String> ids = IntStream.range(0, size).mapToObj((i) -> "doc-" + i).toList();
		this.http.putJson("/collections/mixed", "{\"dimension\": 24, \"metric\": \"" + metric + "\"}");
		// JSON for the first 100, then binary with ids in the query, in the header, and generated.
		Http.Response json = this.http.postJson("/collections/mixed/vectors",
				Map.of("ids", ids.subList(0, 100), "vectors", slice(vectors, 0, 100)));
		assertThat(json.status()).isEqualTo(200);
		assertThat(json.json().get("added").asInt()).isEqualTo(100);
		Http.Response query = this.http.post("/collections/mixed/vectors?ids=" + String.join(",", ids.subList(100, 150)),
				"application/octet-stream", Http.littleEndian(slice(vectors, 100, 150)));
		assertThat(query.status()).as(query.body()).isEqualTo(200);
		Http.Response header = this.http.post("/collections/mixed/vectors", "application/octet-stream",
				Http.littleEndian(slice(vectors, 150, 200)), "X-Vector-Ids", String.join(",", ids.subList(150, 200)));
		assertThat(header.status()).as(header.body()).isEqualTo(200);
		Http.Response generated = this.http.post("/collections/mixed/vectors?idPrefix=doc-&idStart=200",
				"application/octet-stream", Http.littleEndian(slice(vectors, 200, 300)));
		assertThat(generated.json().get("size").asInt()).isEqualTo(300);
		// Replacing through JSON: same ids, new vectors.
		float[][] replacement = BruteForce.randomVectors(random, 10, dimension);
		for (int i = 0; i < 10; i++) {
			vectors[i * 30] = replacement[i];
		}
		Http.Response replaced = this.http.postJson("/collections/mixed/vectors", Map.of("ids",
				IntStream.range(0, 10).mapToObj((i) -> ids.get(i * 30)).toList(), "vectors", replacement));
		assertThat(replaced.json().toString()).isEqualTo("{\"added\":0,\"replaced\":10,\"size\":300}");

		float[][] queries = BruteForce.randomVectors(random, 6, dimension);
		for (int k : new int[] { 1, 7, size }) {
			Http.Response response = this.http.postJson("/collections/mixed/search", Map.of("vectors", queries, "k", k));
			assertThat(response.status()).as(response.body()).isEqualTo(200);
			List<Http.Hits> results = Http.Hits.of(response.json());
			assertThat(results).hasSize(queries.length);
			for (int q = 0; q < queries.length; q++) {
				BruteForce.assertSameResults(results.get(q).ids(), results.get(q).scores(),
						BruteForce.ranking(ids, vectors, queries[q], metric.equals("cosine")), k,
						metric + " k=" + k + " query " + q);
			}
		}
		awaitIdle();
	}

	@Test
	void everyBadInputIsAProblemDetailAndLeaksNothing() {
		this.http.putJson("/collections/bad", "{\"dimension\": 4, \"metric\": \"cosine\"}");
		this.http.postJson("/collections/bad/vectors",
				"{\"ids\": [\"a\", \"b\", \"c\"], \"vectors\": [[1,0,0,0],[0,1,0,0],[0,0,1,0]]}");
		String search = "/collections/bad/search";
		String vectors = "/collections/bad/vectors";

		// Unknown collection, on every route.
		assertProblem(() -> this.http.get("/collections/nope"), 404, "unknown-collection");
		assertProblem(() -> this.http.delete("/collections/nope"), 404, "unknown-collection");
		assertProblem(() -> this.http.postJson("/collections/nope/vectors", "{\"ids\":[\"a\"],\"vectors\":[[1,2,3,4]]}"),
				404, "unknown-collection");
		assertProblem(() -> this.http.post("/collections/nope/vectors?ids=a", "application/octet-stream", new byte[16]),
				404, "unknown-collection");
		assertProblem(() -> this.http.postJson("/collections/nope/search", "{\"vectors\":[[1,2,3,4]],\"k\":1}"), 404,
				"unknown-collection");

		// Wrong dimension.
		assertProblem(() -> this.http.postJson(vectors, "{\"ids\":[\"d\"],\"vectors\":[[1,2,3]]}"), 400, "wrong-dimension");
		assertProblem(() -> this.http.postJson(search, "{\"vectors\":[[1,2,3,4],[1,2,3,4,5]],\"k\":1}"), 400,
				"wrong-dimension");
		assertProblem(() -> this.http.post(vectors + "?ids=d", "application/octet-stream", new byte[12]), 400,
				"wrong-dimension");

		// k outside 1..size.
		for (int k : new int[] { 0, -1, 4, Integer.MAX_VALUE }) {
			assertProblem(() -> this.http.postJson(search, "{\"vectors\":[[1,2,3,4]],\"k\":" + k + "}"), 400,
					"k-out-of-range");
		}
		assertProblem(() -> this.http.postJson(search, "{\"vectors\":[[1,2,3,4]]}"), 400, "invalid-request");

		// Non-finite values, as JSON literals, overflowing decimals and raw float bits.
		for (String value : new String[] { "NaN", "Infinity", "-Infinity", "1e39" }) {
			assertProblem(() -> this.http.postJson(vectors, "{\"ids\":[\"d\"],\"vectors\":[[1," + value + ",0,0]]}"), 400,
					"non-finite-value");
			assertProblem(() -> this.http.postJson(search, "{\"vectors\":[[1,0,0," + value + "]],\"k\":1}"), 400,
					"non-finite-value");
		}
		for (float value : new float[] { Float.NaN, Float.POSITIVE_INFINITY }) {
			byte[] row = ByteBuffer.allocate(16).order(ByteOrder.LITTLE_ENDIAN).putFloat(1).putFloat(value).array();
			assertProblem(() -> this.http.post(vectors + "?ids=d", "application/octet-stream", row), 400,
					"non-finite-value");
		}

		// Bodies over the configured limit (1 MB), with a declared length and chunked.
		byte[] large = new byte[(1 << 20) + 4];
		assertProblem(() -> this.http.post(vectors + "?idPrefix=x", "application/octet-stream", large), 413,
				"body-too-large");
		assertProblem(() -> this.http.postChunked(vectors + "?idPrefix=x", "application/octet-stream", large), 413,
				"body-too-large");
		String bigJson = "{\"vectors\":[" + "[1,2,3,4],".repeat(110_000) + "[1,2,3,4]],\"k\":1}";
		assertProblem(() -> this.http.postJson(search, bigJson), 413, "body-too-large");

		// More vectors than the device memory budget (512 KB: 1024 vectors of dimension 128).
		this.http.putJson("/collections/wide", "{\"dimension\": 128, \"metric\": \"dot\"}");
		float[][] tooMany = BruteForce.randomVectors(new Random(1), 1100, 128);
		assertProblem(() -> this.http.post("/collections/wide/vectors?idPrefix=w", "application/octet-stream",
				Http.littleEndian(tooMany)), 422, "memory-budget-exceeded");
		assertThat(this.http.get("/collections/wide").json().get("size").asInt()).isZero();

		// Everything else a client can get wrong.
		assertProblem(() -> this.http.postJson(search, "{\"vectors\": [[1,2,3,4]], \"k\": "), 400, "invalid-request");
		assertProblem(() -> this.http.postJson(search, "{\"vectors\": [[1,null,3,4]], \"k\": 1}"), 400, "invalid-request");
		assertProblem(() -> this.http.postJson(search, "{\"vectors\": [], \"k\": 1}"), 400, "invalid-request");
		assertProblem(() -> this.http.postJson(search, "{\"vectors\": [[0,0,0,0]], \"k\": 1}"), 400, "invalid-request");
		assertProblem(() -> this.http.postJson(search,
				Map.of("vectors", BruteForce.randomVectors(new Random(2), 51, 4), "k", 1)), 400, "invalid-request");
		assertProblem(() -> this.http.postJson(vectors, "{\"ids\":[\"d\",\"d\"],\"vectors\":[[1,2,3,4],[1,2,3,4]]}"), 400,
				"invalid-request");
		assertProblem(() -> this.http.postJson(vectors, "{\"ids\":[\"d\"],\"vectors\":[[1,2,3,4],[1,2,3,4]]}"), 400,
				"invalid-request");
		assertProblem(() -> this.http.postJson(vectors, "{\"ids\":[\"\"],\"vectors\":[[1,2,3,4]]}"), 400,
				"invalid-request");
		assertProblem(() -> this.http.post(vectors, "application/octet-stream", new byte[16]), 400, "invalid-request");
		assertProblem(() -> this.http.post(vectors + "?ids=d,e", "application/octet-stream", new byte[16]), 400,
				"invalid-request");
		// More hits than sample.limits.max-results (2000) in one answer.
		this.http.putJson("/collections/many", "{\"dimension\": 1, \"metric\": \"dot\"}");
		this.http.post("/collections/many/vectors?idPrefix=m", "application/octet-stream", new byte[4 * 1000]);
		assertProblem(() -> this.http.postJson("/collections/many/search", "{\"vectors\":[[1],[2],[3]],\"k\":700}"),
				400, "too-many-results");
		assertProblem(() -> this.http.putJson("/collections/x", "{\"dimension\": 0}"), 400, "invalid-request");
		assertProblem(() -> this.http.putJson("/collections/x", "{\"dimension\": 5000}"), 400, "invalid-request");
		assertProblem(() -> this.http.putJson("/collections/x", "{\"metric\": \"cosine\"}"), 400, "invalid-request");
		assertProblem(() -> this.http.putJson("/collections/x", "{\"dimension\": 8, \"metric\": \"l2\"}"), 400,
				"invalid-request");
		assertProblem(() -> this.http.putJson("/collections/" + "n".repeat(65), "{\"dimension\": 8}"), 400,
				"invalid-request");
		Http.Response unsupported = this.http.post(search, "text/plain", "k=1".getBytes());
		assertThat(unsupported.status()).isEqualTo(415);
		assertThat(unsupported.contentType()).startsWith("application/problem+json");

		// None of it changed the collection, and it still answers.
		assertThat(this.http.get("/collections/bad").json().get("size").asInt()).isEqualTo(3);
		Http.Response ok = this.http.postJson(search, "{\"vectors\":[[0,0.1,1,0]],\"k\":3}");
		assertThat(Http.Hits.of(ok.json()).get(0).ids()).containsExactly("c", "b", "a");
		awaitIdle();
	}

	@Test
	void jsonIsReadStrictlyAndFrameworkErrorsAreTheServicesProblems() {
		this.http.putJson("/collections/strict", "{\"dimension\": 2, \"metric\": \"dot\"}");
		this.http.postJson("/collections/strict/vectors", "{\"ids\":[\"a\",\"b\"],\"vectors\":[[1,0],[0,1]]}");
		String search = "/collections/strict/search";

		assertField(() -> this.http.postJson(search, "{\"vectors\":[[1,1]],\"k\":1.5}"), "k");
		assertField(() -> this.http.postJson(search, "{\"vectors\":[[1,1]],\"k\":\"2\"}"), "k");
		assertField(() -> this.http.postJson(search, "{\"vectors\":[[1,1]],\"k\":true}"), "k");
		assertField(() -> this.http.postJson(search, "{\"vectors\":[[1,1]],\"k\":1,\"kk\":2}"), "kk");
		assertField(() -> this.http.postJson(search, "{\"vectors\":[[1,\"1\"]],\"k\":1}"), "vectors[0][1]");
		assertField(() -> this.http.postJson(search, "{\"vectors\":{\"a\":1},\"k\":1}"), "vectors");
		assertField(() -> this.http.putJson("/collections/strict2", "{\"dimension\": 2.0}"), "dimension");
		assertField(() -> this.http.putJson("/collections/strict2", "{\"dimension\": 2, \"metrik\": \"dot\"}"),
				"metrik");
		assertField(() -> this.http.postJson("/collections/strict/vectors",
				"{\"ids\":[\"c\"],\"vectors\":[[1,2]],\"extra\":1}"), "extra");
		assertProblem(() -> this.http.postJson(search, "{\"vectors\":[[1,1]],\"k\":1} {}"), 400, "invalid-request");
		assertProblem(() -> this.http.postJson(search, "[1,2"), 400, "invalid-request");
		// Integral numbers are still numbers: 2 is a float in a vector, and k may be written 1.
		assertThat(this.http.postJson(search, "{\"vectors\":[[1,2]],\"k\":1}").status()).isEqualTo(200);

		// Spring MVC's own refusals, in the service's problem format.
		assertProblem(() -> this.http.post(search, "text/plain", "k=1".getBytes()), 415, "unsupported-media-type");
		assertProblem(() -> this.http.send(java.net.http.HttpRequest.newBuilder()
			.uri(java.net.URI.create(this.http.base() + "/collections/strict/search"))
			.GET()), 405, "method-not-allowed");
		assertProblem(() -> this.http.send(java.net.http.HttpRequest.newBuilder()
			.uri(java.net.URI.create(this.http.base() + "/collections/strict/vectors?idPrefix=x&idStart=abc"))
			.header("Content-Type", "application/octet-stream")
			.POST(java.net.http.HttpRequest.BodyPublishers.ofByteArray(new byte[8]))), 400, "bad-request");
		Http.Response notAcceptable = this.http.send(java.net.http.HttpRequest.newBuilder()
			.uri(java.net.URI.create(this.http.base() + "/collections/strict"))
			.header("Accept", "text/csv")
			.GET());
		assertThat(notAcceptable.status()).isEqualTo(406);
		assertThat(notAcceptable.json().get("type").asString())
			.isEqualTo("urn:gpu-compute:sample:problem:not-acceptable");
		// The error page (what fails outside Spring MVC's handlers lands there) answers in the same format.
		Http.Response errorPage = this.http.get("/error");
		assertThat(errorPage.contentType()).startsWith("application/problem+json");
		assertThat(errorPage.json().get("type").asString()).startsWith("urn:gpu-compute:sample:problem:");
		awaitIdle();
	}

	@Test
	void unreadableJsonIsDescribedInTheRequestsTermsNotJacksons() {
		this.http.putJson("/collections/terms", "{\"dimension\": 2, \"metric\": \"dot\"}");
		String search = "/collections/terms/search";
		// A body cut short: where it ends, and what JSON needed there.
		assertDetail(this.http.postJson(search, "{\"vectors\": [[1,2]], \"k\": 2"), "body",
				"Malformed JSON at line 1, column 28 (after k): the body ends; expected ',' or '}'");
		assertDetail(this.http.postJson(search, "{\"vectors\": [[1,2]], \"k\": "), "body",
				"Malformed JSON at line 1, column 27 (in k): the body ends; expected a value");
		// The wrong type: the field's path and the type the request has there.
		assertDetail(this.http.postJson(search, "{\"vectors\":[[1,1]],\"k\":\"2\"}"), "k",
				"k must be an integer, got a string (\"2\")");
		assertDetail(this.http.postJson(search, "{\"vectors\":[[1,true]],\"k\":1}"), "vectors[0][1]",
				"vectors[0][1] must be a number, got true");
		assertDetail(this.http.postJson(search, "{\"vectors\":[1,2],\"k\":1}"), "vectors[0]",
				"vectors[0] must be an array of numbers, got 1");
		// A field the request does not have.
		assertDetail(this.http.postJson(search, "{\"vectors\":[[1,1]],\"k\":1,\"top\":5}"), "top",
				"Unknown field 'top': this request has the fields vectors and k");
		assertDetail(this.http.putJson("/collections/terms2", "{\"dimension\": 2, \"metrik\": \"dot\"}"), "metrik",
				"Unknown field 'metrik': this request has the fields dimension and metric");
		awaitIdle();
	}

	/** A 400 invalid-request problem with the given field and exactly the given detail, free of Jackson's words. */
	private static void assertDetail(Http.Response response, String field, String detail) {
		assertThat(response.status()).as(response.body()).isEqualTo(400);
		assertThat(response.contentType()).startsWith("application/problem+json");
		JsonNode problem = response.json();
		assertThat(problem.get("type").asString()).isEqualTo("urn:gpu-compute:sample:problem:invalid-request");
		assertThat(problem.get("field").asString()).isEqualTo(field);
		assertThat(problem.get("detail").asString()).isEqualTo(detail);
		assertThat(response.body()).doesNotContain("Cannot", "coerce", "CoercionConfig", "REDACTED", "Source",
				"java.", "JsonToken", "marker");
	}

	/** A 400 invalid-request problem whose field property names {@code field}. */
	private void assertField(Supplier<Http.Response> request, String field) {
		Http.Response response = request.get();
		assertThat(response.status()).as(response.body()).isEqualTo(400);
		assertThat(response.contentType()).startsWith("application/problem+json");
		assertThat(response.json().get("type").asString()).isEqualTo("urn:gpu-compute:sample:problem:invalid-request");
		assertThat(response.json().get("field").asString()).as(response.body()).isEqualTo(field);
		assertThat(response.json().get("detail").asString()).contains(field);
	}

	@Test
	void actuatorShowsTheKernelsAndPrometheusTheirMeters() {
		this.http.putJson("/collections/m", "{\"dimension\": 2, \"metric\": \"dot\"}");
		this.http.postJson("/collections/m/vectors", "{\"ids\":[\"p\",\"q\"],\"vectors\":[[1,0],[0,1]]}");
		assertThat(this.http.postJson("/collections/m/search", "{\"vectors\":[[1,1]],\"k\":2}").status()).isEqualTo(200);
		JsonNode gpu = this.http.get("/actuator/gpu").json();
		assertThat(gpu.toString()).contains("knn_fused", "knn_score", "knn_topk", "knn_scatter");
		String prometheus = this.http.get("/actuator/prometheus").body();
		assertThat(prometheus).containsPattern("gpu_kernel_launches_total\\{[^}]*kernel=\"knn_fused\"[^}]*outcome=\"success\"[^}]*\\} [1-9]");
		assertThat(prometheus).contains("gpu_streams_active", "gpu_memory_used_bytes", "gpu_kernel_duration_seconds");
		JsonNode health = this.http.get("/actuator/health").json();
		assertThat(health.get("status").asString()).isEqualTo("UP");
		assertThat(health.get("components").get("gpu").get("status").asString()).isEqualTo("UP");
	}

	/** Sends a bad request and checks its problem detail, and that it left no GPU resource behind. */
	private void assertProblem(Supplier<Http.Response> request, int status, String type) {
		long buffersBefore = this.context.memory().liveBuffers();
		Http.Response response = request.get();
		assertThat(response.status()).as(response.body()).isEqualTo(status);
		assertThat(response.contentType()).startsWith("application/problem+json");
		JsonNode problem = response.json();
		assertThat(problem.get("type").asString()).isEqualTo("urn:gpu-compute:sample:problem:" + type);
		assertThat(problem.get("status").asInt()).isEqualTo(status);
		assertThat(problem.get("title").asString()).isNotBlank();
		assertThat(problem.get("detail").asString()).isNotBlank();
		assertThat(problem.get("instance").asString()).startsWith("/collections");
		assertThat(this.context.streams().stats().active()).as("leased streams after " + type).isZero();
		assertThat(this.context.events().inUse()).as("events in use after " + type).isZero();
		assertThat(this.context.memory().liveBuffers()).as("device buffers after " + type).isEqualTo(buffersBefore);
	}

	private static float[][] slice(float[][] rows, int from, int to) {
		return java.util.Arrays.copyOfRange(rows, from, to);
	}

}
