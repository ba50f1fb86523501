package dev.gpucompute.sample.web;

import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.io.UncheckedIOException;

import jakarta.servlet.http.HttpServletRequest;
import tools.jackson.core.JacksonException;
import tools.jackson.core.json.JsonReadFeature;
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
 * vector and trailing content are 400 problems naming the field. Every failure is described in the
 * request's terms by {@link JsonErrors} (position, JSON path, what was expected), never in Jackson's.
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

	/** A binary body read as little-endian float32 values, and its length in bytes. */
	public record Floats(float[] values, long bytes) {
	}

	/**
	 * The body as little-endian float32 values, read straight from the request stream in 64 KB steps
	 * into one array (sized from the declared length, when there is one): no byte[] copy of the body.
	 * @throws ServiceProblem 413 when it exceeds the limit
	 */
	public Floats readFloats(HttpServletRequest request) {
		long declared = request.getContentLengthLong();
		if (declared > this.limit) {
			throw ServiceProblem.bodyTooLarge(this.limit, declared);
		}
		float[] values = new float[(declared >= 0) ? (int) (declared / Float.BYTES) : 1 << 14];
		byte[] chunk = new byte[1 << 16];
		ByteBuffer view = ByteBuffer.wrap(chunk).order(ByteOrder.LITTLE_ENDIAN);
		long total = 0;
		int count = 0;
		int carry = 0;
		try (InputStream in = request.getInputStream()) {
			for (int n; (n = in.read(chunk, carry, chunk.length - carry)) >= 0;) {
				total += n;
				if (total > this.limit) {
					throw ServiceProblem.bodyTooLarge(this.limit, -1);
				}
				int available = carry + n;
				int whole = available / Float.BYTES;
				if (count + whole > values.length) {
					values = Arrays.copyOf(values, Math.max(count + whole, 2 * values.length));
				}
				view.clear();
				view.asFloatBuffer().get(values, count, whole);
				count += whole;
				carry = available - whole * Float.BYTES;
				System.arraycopy(chunk, whole * Float.BYTES, chunk, 0, carry);
			}
		}
		catch (IOException ex) {
			throw new UncheckedIOException("Reading the request body failed", ex);
		}
		return new Floats((count == values.length) ? values : Arrays.copyOf(values, count), total);
	}

	/**
	 * The body parsed as JSON.
	 * @throws ServiceProblem 413 when it exceeds the limit, 400 when it is missing, malformed or of the
	 * wrong shape
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
			// In the request's terms (where, what was found, what was expected), never Jackson's own words.
			throw JsonErrors.problem(ex, body, type);
		}
	}

	public long limit() {
		return this.limit;
	}

}
