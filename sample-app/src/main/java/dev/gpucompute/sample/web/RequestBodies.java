package dev.gpucompute.sample.web;

import java.io.IOException;
import java.io.UncheckedIOException;

import jakarta.servlet.http.HttpServletRequest;
import tools.jackson.core.JacksonException;
import tools.jackson.core.json.JsonReadFeature;
import tools.jackson.databind.DatabindException;
import tools.jackson.databind.DeserializationFeature;
import tools.jackson.databind.cfg.CoercionAction;
import tools.jackson.databind.cfg.CoercionInputShape;
import tools.jackson.databind.type.LogicalType;
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
 * {@code null} inside a vector is an error rather than a silent 0. Parsing is strict: unknown
 * fields, a fractional or quoted integer ({@code "k": 1.5}, {@code "k": "2"}), a quoted number in a
 * vector and trailing content are 400 problems naming the field.
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
			// Strict: a field the request type does not have, k = 1.5 or k = "2" are errors, not guesses.
			.enable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
			.disable(DeserializationFeature.ACCEPT_FLOAT_AS_INT)
			.enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
			.withCoercionConfigDefaults((config) -> config.setCoercion(CoercionInputShape.String, CoercionAction.Fail)
				.setCoercion(CoercionInputShape.Boolean, CoercionAction.Fail)
				.setCoercion(CoercionInputShape.Integer, CoercionAction.Fail)
				.setCoercion(CoercionInputShape.Float, CoercionAction.Fail)
				.setCoercion(CoercionInputShape.EmptyString, CoercionAction.Fail))
			// Numbers are numbers: 1 is a valid float (vector values) and an integer (k, dimension).
			.withCoercionConfig(LogicalType.Float, (config) -> config.setCoercion(CoercionInputShape.Integer,
					CoercionAction.TryConvert))
			.withCoercionConfig(LogicalType.Integer, (config) -> config.setCoercion(CoercionInputShape.Integer,
					CoercionAction.TryConvert))
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
		catch (DatabindException ex) {
			// Valid JSON of the wrong shape: name the field (k, vectors[2][0], ...).
			String field = field(ex);
			throw ServiceProblem.invalid(field, (field.equals("body") ? "" : field + ": ") + ex.getOriginalMessage());
		}
		catch (JacksonException ex) {
			throw ServiceProblem.invalid("body", "Malformed JSON body: " + ex.getOriginalMessage());
		}
	}

	/** The JSON path of the error, as {@code vectors[1][0]}, or {@code body} at the top level. */
	private static String field(JacksonException ex) {
		StringBuilder field = new StringBuilder();
		for (JacksonException.Reference reference : ex.getPath()) {
			if (reference.getPropertyName() != null) {
				field.append(field.isEmpty() ? "" : ".").append(reference.getPropertyName());
			}
			else if (reference.getIndex() >= 0) {
				field.append('[').append(reference.getIndex()).append(']');
			}
		}
		return field.isEmpty() ? "body" : field.toString();
	}

	public long limit() {
		return this.limit;
	}

}
