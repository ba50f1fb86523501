package dev.gpucompute.sample.web;

import java.io.IOException;
import java.io.UncheckedIOException;

import jakarta.servlet.http.HttpServletRequest;
import tools.jackson.core.JacksonException;
import tools.jackson.core.json.JsonReadFeature;
import tools.jackson.databind.DeserializationFeature;
import tools.jackson.databind.json.JsonMapper;

import org.springframework.stereotype.Component;

import dev.gpucompute.sample.SampleProperties;
import dev.gpucompute.sample.search.ServiceProblem;

/**
 * Reads request bodies within {@code sample.limits.max-body-size}: a declared length over the limit
 * is refused before a byte is read, and a chunked body is read only up to one byte past it, so an
 * oversized request costs at most the limit in memory. JSON is parsed with the application's
 * mapper, reconfigured so that {@code NaN} and {@code Infinity} literals parse (and are then
 * reported as non-finite values with their position, which is clearer than a syntax error) and a
 * {@code null} inside a vector is an error rather than a silent 0.
 */
@Component
public final class RequestBodies {

	private final long limit;

	private final JsonMapper mapper;

	RequestBodies(SampleProperties properties, JsonMapper mapper) {
		this.limit = properties.getLimits().getMaxBodySize().toBytes();
		this.mapper = mapper.rebuild()
			.enable(JsonReadFeature.ALLOW_NON_NUMERIC_NUMBERS)
			.enable(DeserializationFeature.FAIL_ON_NULL_FOR_PRIMITIVES)
			.build();
	}

	/**
	 * The whole body.
	 * @throws ServiceProblem 413 when it exceeds the limit
	 */
	public byte[] read(HttpServletRequest request) {
		long declared = request.getContentLengthLong();
		if (declared > this.limit) {
			throw ServiceProblem.bodyTooLarge(this.limit, declared);
		}
		try {
			byte[] body = request.getInputStream().readNBytes((int) Math.min(this.limit + 1, Integer.MAX_VALUE - 8));
			if (body.length > this.limit) {
				throw ServiceProblem.bodyTooLarge(this.limit, -1);
			}
			return body;
		}
		catch (IOException ex) {
			throw new UncheckedIOException("Reading the request body failed", ex);
		}
	}

	/**
	 * The body parsed as JSON.
	 * @throws ServiceProblem 413 when it exceeds the limit, 400 when it is missing or malformed
	 */
	public <T> T json(HttpServletRequest request, Class<T> type) {
		byte[] body = read(request);
		if (body.length == 0) {
			throw ServiceProblem.invalid("body", "A JSON request body is required");
		}
		try {
			T value = this.mapper.readValue(body, type);
			if (value == null) {
				throw ServiceProblem.invalid("body", "A JSON object is required, got null");
			}
			return value;
		}
		catch (JacksonException ex) {
			throw ServiceProblem.invalid("body", "Malformed JSON body: " + ex.getOriginalMessage());
		}
	}

	public long limit() {
		return this.limit;
	}

}
