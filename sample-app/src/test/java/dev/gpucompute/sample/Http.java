package dev.gpucompute.sample;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/** A small HTTP client for the tests: real requests over loopback, JSON via Jackson. */
public final class Http {

	public static final JsonMapper JSON = JsonMapper.builder().build();

	private final HttpClient client = HttpClient.newBuilder()
		.version(HttpClient.Version.HTTP_1_1)
		.connectTimeout(Duration.ofSeconds(10))
		.build();

	private final String base;

	public Http(String base) {
		this.base = base;
	}

	/** A response: status, content type, body and headers. */
	public record Response(int status, String contentType, String body, java.net.http.HttpHeaders headers) {

		public JsonNode json() {
			return JSON.readTree(this.body);
		}

		/** The first value of a header, or {@code null}. */
		public String header(String name) {
			return this.headers.firstValue(name).orElse(null);
		}

	}

	public String base() {
		return this.base;
	}

	/** Deletes every collection of the service. */
	public void deleteAllCollections() {
		for (JsonNode collection : get("/collections").json()) {
			delete("/collections/" + collection.get("name").asString());
		}
	}

	public Response get(String path) {
		return send(HttpRequest.newBuilder(uri(path)).GET());
	}

	public Response delete(String path) {
		return send(HttpRequest.newBuilder(uri(path)).DELETE());
	}

	public Response putJson(String path, String json) {
		return send(HttpRequest.newBuilder(uri(path))
			.header("Content-Type", "application/json")
			.PUT(HttpRequest.BodyPublishers.ofString(json)));
	}

	public Response postJson(String path, String json) {
		return send(HttpRequest.newBuilder(uri(path))
			.header("Content-Type", "application/json")
			.POST(HttpRequest.BodyPublishers.ofString(json)));
	}

	public Response postJson(String path, Object body) {
		return postJson(path, JSON.writeValueAsString(body));
	}

	public Response post(String path, String contentType, byte[] body, String... headers) {
		return send(postRequest(path, contentType, body, headers));
	}

	private HttpRequest.Builder postRequest(String path, String contentType, byte[] body, String... headers) {
		HttpRequest.Builder request = HttpRequest.newBuilder(uri(path))
			.header("Content-Type", contentType)
			.POST(HttpRequest.BodyPublishers.ofByteArray(body));
		for (int i = 0; i < headers.length; i += 2) {
			request.header(headers[i], headers[i + 1]);
		}
		return request;
	}

	/** A POST whose body is streamed without a Content-Length (chunked transfer encoding). */
	public Response postChunked(String path, String contentType, byte[] body) {
		return send(HttpRequest.newBuilder(uri(path))
			.header("Content-Type", contentType)
			.POST(HttpRequest.BodyPublishers.ofInputStream(() -> new java.io.ByteArrayInputStream(body))));
	}

	/** A response whose body is kept as bytes (a binary answer, or a problem detail to parse). */
	public record BinaryResponse(int status, String contentType, byte[] body) {

		public JsonNode json() {
			return JSON.readTree(this.body);
		}

	}

	/** A POST whose answer is read as bytes; {@code headers} are name, value pairs. */
	public BinaryResponse postForBytes(String path, String contentType, byte[] body, String... headers) {
		HttpResponse<byte[]> response = exchange(postRequest(path, contentType, body, headers),
				HttpResponse.BodyHandlers.ofByteArray());
		return new BinaryResponse(response.statusCode(), response.headers().firstValue("Content-Type").orElse(""),
				response.body());
	}

	public Response send(HttpRequest.Builder request) {
		HttpResponse<String> response = exchange(request, HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
		return new Response(response.statusCode(), response.headers().firstValue("Content-Type").orElse(""),
				response.body(), response.headers());
	}

	private <T> HttpResponse<T> exchange(HttpRequest.Builder request, HttpResponse.BodyHandler<T> body) {
		try {
			return this.client.send(request.timeout(Duration.ofSeconds(60)).build(), body);
		}
		catch (IOException ex) {
			throw new UncheckedIOException(ex);
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			throw new IllegalStateException(ex);
		}
	}

	private URI uri(String path) {
		return URI.create(this.base + path);
	}

	/** Rows as little-endian float32, back to back. */
	public static byte[] littleEndian(float[][] rows) {
		ByteBuffer buffer = ByteBuffer.allocate(rows.length * rows[0].length * 4).order(ByteOrder.LITTLE_ENDIAN);
		for (float[] row : rows) {
			for (float value : row) {
				buffer.putFloat(value);
			}
		}
		return buffer.array();
	}

	/** The ids and scores of one query's results. */
	public record Hits(List<String> ids, float[] scores) {

		public static List<Hits> of(JsonNode response) {
			List<Hits> all = new ArrayList<>();
			for (JsonNode query : response.get("results")) {
				List<String> ids = new ArrayList<>();
				float[] scores = new float[query.size()];
				int i = 0;
				for (JsonNode hit : query) {
					ids.add(hit.get("id").asString());
					scores[i++] = hit.get("score").floatValue();
				}
				all.add(new Hits(ids, scores));
			}
			return all;
		}

		/**
		 * A binary answer ({@code application/vnd.gpu-compute.hits}): uint32 queries, uint32 k, float32
		 * scores, uint32 id offsets (queries * k + 1), UTF-8 ids; little-endian. Checks that the
		 * body ends where the format says.
		 */
		public static List<Hits> ofBinary(byte[] body) {
			ByteBuffer in = ByteBuffer.wrap(body).order(ByteOrder.LITTLE_ENDIAN);
			int queries = in.getInt();
			int k = in.getInt();
			int hits = queries * k;
			float[] scores = new float[hits];
			in.asFloatBuffer().get(scores);
			in.position(8 + 4 * hits);
			int[] offsets = new int[hits + 1];
			in.asIntBuffer().get(offsets);
			int blob = 8 + 4 * hits + 4 * (hits + 1);
			if (body.length != blob + offsets[hits]) {
				throw new IllegalStateException("the answer has " + body.length + " bytes, its header says "
						+ (blob + offsets[hits]));
			}
			List<Hits> all = new ArrayList<>();
			for (int q = 0; q < queries; q++) {
				List<String> ids = new ArrayList<>();
				for (int r = 0; r < k; r++) {
					int i = q * k + r;
					ids.add(new String(body, blob + offsets[i], offsets[i + 1] - offsets[i], StandardCharsets.UTF_8));
				}
				all.add(new Hits(ids, java.util.Arrays.copyOfRange(scores, q * k, (q + 1) * k)));
			}
			return all;
		}

	}

}
