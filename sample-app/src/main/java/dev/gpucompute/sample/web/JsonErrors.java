package dev.gpucompute.sample.web;

import java.lang.reflect.GenericArrayType;
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.RecordComponent;
import java.lang.reflect.Type;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.Collection;
import java.util.List;
import java.util.Locale;

import org.jspecify.annotations.Nullable;
import tools.jackson.core.JacksonException;
import tools.jackson.core.JsonToken;
import tools.jackson.core.TokenStreamLocation;
import tools.jackson.core.exc.InputCoercionException;
import tools.jackson.core.exc.StreamConstraintsException;
import tools.jackson.core.exc.StreamReadException;
import tools.jackson.databind.exc.InvalidFormatException;
import tools.jackson.databind.exc.MismatchedInputException;
import tools.jackson.databind.exc.UnrecognizedPropertyException;

import dev.gpucompute.sample.search.ServiceProblem;

/**
 * Turns Jackson's failure to read a request body into a 400 problem in the request's terms: where
 * (line and column, and the JSON path such as {@code vectors[0][1]}), what was found and what was
 * expected, from the body itself and the request type, never from Jackson's own message (which names
 * Java types, coercion settings and a redacted source description). Two kinds:
 * <ul>
 * <li>malformed JSON (a syntax error or a body that ends too early): {@code field} is {@code body}, with
 * {@code line} and {@code column} of the first place where the body stops being JSON
 * ({@link JsonSyntax}); the detail says where that is in the document, what was found and what JSON
 * allows there;</li>
 * <li>valid JSON of the wrong shape: {@code field} is the JSON path of the value, and the detail says
 * what type the request has there ({@code "k must be an integer, got a string (\"2\")"}), or which
 * fields an object has when a field is unknown.</li>
 * </ul>
 * Stateless; thread-safe.
 */
final class JsonErrors {

	/** Longest excerpt of a found value quoted in a detail. */
	private static final int EXCERPT = 24;

	private JsonErrors() {
	}

	/**
	 * The problem for {@code failure}, thrown while reading {@code body} as {@code type}.
	 * @param type the request type: a record whose components are the JSON fields
	 */
	static ServiceProblem problem(JacksonException failure, byte[] body, Class<?> type) {
		long offset = offset(failure, body);
		if (failure instanceof StreamConstraintsException) {
			return malformed("The JSON body exceeds a parser limit (nesting depth, or the length of a number or "
					+ "string) at " + position(failure, body, offset), failure, body, offset);
		}
		String field = path(failure.getPath());
		// A syntax error comes with the path of the value being bound when it happened; it is still a
		// syntax error. A number too large for its field is a value of the wrong type.
		if (failure instanceof StreamReadException && !(failure instanceof InputCoercionException && !field.isEmpty())) {
			return malformedSyntax(failure, body, offset);
		}
		if (!field.isEmpty()) {
			return ServiceProblem.invalid(field, wrongValue(failure, body, offset, type, field));
		}
		// Valid JSON of the wrong shape at the top level: not an object, or more after it.
		int start = firstSignificant(body);
		if (offset > start && start >= 0) {
			return malformed("Unexpected content after the JSON object at " + position(failure, body, offset)
					+ ": the body must hold one JSON object", failure, body, offset);
		}
		JsonToken token = (failure instanceof MismatchedInputException mismatch) ? mismatch.getCurrentToken() : null;
		return ServiceProblem.invalid("body", "The body must be a JSON object"
				+ ((token != null) ? ", got " + found(token, body, offset, null) : ""));
	}

	// ---- the wrong shape -----------------------------------------------------------------------------

	private static String wrongValue(JacksonException failure, byte[] body, long offset, Class<?> type, String field) {
		List<JacksonException.Reference> path = failure.getPath();
		if (failure instanceof UnrecognizedPropertyException) {
			Type parent = typeAt(type, path.subList(0, path.size() - 1));
			List<String> fields = (parent instanceof Class<?> record && record.isRecord())
					? java.util.Arrays.stream(record.getRecordComponents()).map(RecordComponent::getName).toList()
					: List.of();
			String unknown = "Unknown field '" + path.get(path.size() - 1).getPropertyName() + "'";
			if (fields.isEmpty()) {
				return unknown;
			}
			String owner = (path.size() > 1) ? path(path.subList(0, path.size() - 1)) : "this request";
			return unknown + ": " + owner + " has the fields " + and(fields);
		}
		String expected = describe(typeAt(type, path), false);
		String must = field + " must be " + ((expected != null) ? expected : "of another type");
		if (failure instanceof InputCoercionException) {
			return must + ", got a number out of its range";
		}
		if (failure instanceof MismatchedInputException mismatch && mismatch.getCurrentToken() != null) {
			Object value = (failure instanceof InvalidFormatException format) ? format.getValue() : null;
			return must + ", got " + found(mismatch.getCurrentToken(), body, offset, value);
		}
		return must;
	}

	/** The type the request has at {@code path}, or {@code null} when it cannot be told. */
	private static @Nullable Type typeAt(Type root, List<JacksonException.Reference> path) {
		Type type = root;
		for (JacksonException.Reference reference : path) {
			if (reference.getPropertyName() != null) {
				if (!(type instanceof Class<?> record) || !record.isRecord()) {
					return null;
				}
				type = null;
				for (RecordComponent component : record.getRecordComponents()) {
					if (component.getName().equals(reference.getPropertyName())) {
						type = component.getGenericType();
					}
				}
			}
			else {
				type = element(type);
			}
			if (type == null) {
				return null;
			}
		}
		return type;
	}

	private static @Nullable Type element(Type type) {
		if (type instanceof Class<?> array && array.isArray()) {
			return array.getComponentType();
		}
		if (type instanceof GenericArrayType array) {
			return array.getGenericComponentType();
		}
		if (type instanceof ParameterizedType generic && generic.getRawType() instanceof Class<?> raw
				&& Collection.class.isAssignableFrom(raw)) {
			return generic.getActualTypeArguments()[0];
		}
		return null;
	}

	/** A JSON description of a Java type: "an integer", "an array of numbers", ...; plural: "integers". */
	private static @Nullable String describe(@Nullable Type type, boolean plural) {
		if (type == null) {
			return null;
		}
		Type element = element(type);
		if (element != null) {
			String elements = describe(element, true);
			return (plural ? "arrays" : "an array") + ((elements != null) ? " of " + elements : "");
		}
		if (!(type instanceof Class<?> c)) {
			return null;
		}
		if (c == Integer.class || c == int.class || c == Long.class || c == long.class || c == Short.class
				|| c == short.class) {
			return plural ? "integers" : "an integer";
		}
		if (c == Float.class || c == float.class || c == Double.class || c == double.class) {
			return plural ? "numbers" : "a number";
		}
		if (c == String.class) {
			return plural ? "strings" : "a string";
		}
		if (c == Boolean.class || c == boolean.class) {
			return plural ? "booleans" : "true or false";
		}
		if (c.isRecord()) {
			return plural ? "objects" : "an object";
		}
		return null;
	}

	/** What was found: "a string (\"2\")", "1.5", "true", "null", "an array", "an object". */
	private static String found(JsonToken token, byte[] body, long offset, @Nullable Object value) {
		switch (token) {
			case VALUE_STRING:
				String text = scalarAt(body, offset);
				return "a string" + ((text != null && text.startsWith("\"")) ? " (" + text + ")" : "");
			case VALUE_NUMBER_INT:
			case VALUE_NUMBER_FLOAT:
				String number = (value != null) ? String.valueOf(value) : scalarAt(body, offset);
				return (number != null) ? number : "a number";
			case VALUE_TRUE:
				return "true";
			case VALUE_FALSE:
				return "false";
			case VALUE_NULL:
				return "null";
			case START_ARRAY:
				return "an array";
			case START_OBJECT:
				return "an object";
			default:
				return "something else";
		}
	}

	/** The string or number literal at {@code offset} of the body, shortened, or {@code null}. */
	private static @Nullable String scalarAt(byte[] body, long offset) {
		if (offset < 0 || offset >= body.length) {
			return null;
		}
		int start = (int) offset;
		int end = start;
		if (body[start] == '"') {
			end++;
			while (end < body.length && body[end] != '"') {
				end += (body[end] == '\\') ? 2 : 1;
			}
			end = Math.min(end + 1, body.length);
		}
		else {
			while (end < body.length && isWordByte(body[end])) {
				end++;
			}
		}
		if (end == start) {
			return null;
		}
		String text = new String(body, start, end - start, StandardCharsets.UTF_8);
		return (text.length() > EXCERPT) ? text.substring(0, EXCERPT) + "..." : text;
	}

	// ---- malformed JSON ---------------------------------------------------------------------------

	private static ServiceProblem malformed(String detail, JacksonException failure, byte[] body, long offset) {
		int[] lineColumn = lineColumn(failure, body, offset);
		return ServiceProblem.malformedJson(detail, lineColumn[0], lineColumn[1]);
	}

	/**
	 * "Malformed JSON at line 1, column 31 (in k): the body ends; expected a value". The position is
	 * the first place where the body stops being JSON, found by {@link JsonSyntax} reading the body itself:
	 * Jackson's own position can lie past it (a value it was binding when it noticed). Only when that
	 * reading finds no error is Jackson's position used, with what was found there. The body is read
	 * once for the detail and the problem's line and column: it may be as large as the request limit.
	 */
	private static ServiceProblem malformedSyntax(JacksonException failure, byte[] body, long offset) {
		if (!validUtf8(body, offset)) {
			return malformed("The body is not valid UTF-8 JSON (at " + position(failure, body, offset) + ")", failure,
					body, offset);
		}
		JsonSyntax.Error error = JsonSyntax.firstError(body);
		if (error == null) {
			return malformed("Malformed JSON at " + position(failure, body, offset)
					+ ((offset >= 0 && offset < body.length) ? ": unexpected " + character(body, (int) offset) : ""),
					failure, body, offset);
		}
		int[] lineColumn = lineColumn(body, error.offset());
		String detail = "Malformed JSON at line " + lineColumn[0] + ", column " + lineColumn[1]
				+ (error.where().isEmpty() ? "" : " (" + error.where() + ")") + ": " + error.found() + "; expected "
				+ error.expected();
		int[] at = (error.offset() == offset) ? lineColumn(failure, body, offset) : lineColumn;
		return ServiceProblem.malformedJson(detail, at[0], at[1]);
	}

	/** The offending bytes: a word ('tru', 'vectors'), one printable character, or a byte in hex. */
	static String character(byte[] body, int offset) {
		byte b = body[offset];
		if (isWordByte(b)) {
			String word = scalarAt(body, offset);
			return "'" + word + "'";
		}
		if (b >= 0x20 && b < 0x7f) {
			return "'" + (char) b + "'";
		}
		return String.format(Locale.ROOT, "byte 0x%02X", b & 0xff);
	}

	static boolean isWordByte(byte b) {
		return (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') || (b >= '0' && b <= '9') || b == '-' || b == '+'
				|| b == '.' || b == '_';
	}

	private static boolean validUtf8(byte[] body, long offset) {
		int end = (int) Math.min(body.length, Math.max(0, offset) + 4);
		try {
			StandardCharsets.UTF_8.newDecoder()
				.onMalformedInput(CodingErrorAction.REPORT)
				.onUnmappableCharacter(CodingErrorAction.REPORT)
				.decode(ByteBuffer.wrap(body, 0, end));
			return true;
		}
		catch (CharacterCodingException ex) {
			// A multi-byte character cut by the window's end is not malformed; anything else is.
			return end < body.length && validUtf8Prefix(body, end);
		}
	}

	private static boolean validUtf8Prefix(byte[] body, int end) {
		for (int cut = end - 1; cut >= Math.max(0, end - 3); cut--) {
			try {
				StandardCharsets.UTF_8.newDecoder()
					.onMalformedInput(CodingErrorAction.REPORT)
					.decode(ByteBuffer.wrap(body, 0, cut));
				return true;
			}
			catch (CharacterCodingException ex) {
				// try a shorter prefix
			}
		}
		return false;
	}

	// ---- positions --------------------------------------------------------------------------------

	private static long offset(JacksonException failure, byte[] body) {
		TokenStreamLocation location = failure.getLocation();
		long offset = (location != null) ? location.getByteOffset() : -1;
		return (offset >= 0) ? Math.min(offset, body.length) : -1;
	}

	/** "line 2, column 6". */
	private static String position(JacksonException failure, byte[] body, long offset) {
		int[] lineColumn = lineColumn(failure, body, offset);
		return (lineColumn[0] > 0) ? "line " + lineColumn[0] + ", column " + lineColumn[1] : "an unknown position";
	}

	/** Jackson's line and column (1-based), else counted from the byte offset; {0, 0} when unknown. */
	private static int[] lineColumn(JacksonException failure, byte[] body, long offset) {
		TokenStreamLocation location = failure.getLocation();
		if (location != null && location.getLineNr() > 0 && location.getColumnNr() > 0) {
			return new int[] { location.getLineNr(), location.getColumnNr() };
		}
		return (offset < 0) ? new int[] { 0, 0 } : lineColumn(body, offset);
	}

	/** The line and column (1-based; columns count characters) of {@code offset} in the body. */
	static int[] lineColumn(byte[] body, long offset) {
		int line = 1;
		int column = 1;
		for (int i = 0; i < offset && i < body.length; i++) {
			if (body[i] == '\n') {
				line++;
				column = 1;
			}
			else if ((body[i] & 0xC0) != 0x80) {
				column++; // characters, not bytes: UTF-8 continuation bytes do not count
			}
		}
		return new int[] { line, column };
	}

	private static int firstSignificant(byte[] body) {
		for (int i = 0; i < body.length; i++) {
			if (body[i] != ' ' && body[i] != '\t' && body[i] != '\n' && body[i] != '\r') {
				return i;
			}
		}
		return -1;
	}

	/** The JSON path of the error, as {@code vectors[1][0]}; empty at the top level. */
	static String path(List<JacksonException.Reference> references) {
		StringBuilder field = new StringBuilder();
		for (JacksonException.Reference reference : references) {
			if (reference.getPropertyName() != null) {
				field.append(field.isEmpty() ? "" : ".").append(reference.getPropertyName());
			}
			else if (reference.getIndex() >= 0) {
				field.append('[').append(reference.getIndex()).append(']');
			}
		}
		return field.toString();
	}

	/** "a", "a and b", "a, b and c". */
	private static String and(List<String> words) {
		if (words.size() < 2) {
			return String.join("", words);
		}
		return String.join(", ", words.subList(0, words.size() - 1)) + " and " + words.get(words.size() - 1);
	}

}
