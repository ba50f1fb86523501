package dev.gpucompute.sample.web;

import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.Iterator;
import java.util.Locale;
import java.util.Set;

import org.jspecify.annotations.Nullable;

/**
 * Finds the first place where a body stops being JSON (RFC 8259, plus the {@code NaN} and
 * {@code Infinity} literals the service's parser accepts) and says where that is in the document
 * and what JSON allows there. It describes a body Jackson has already refused; the parsing itself is
 * Jackson's. A body this reads as JSON has no error here ({@code null}), and the caller falls back to
 * Jackson's position. Stateless; thread-safe.
 */
final class JsonSyntax {

	/**
	 * The first error.
	 * @param offset the byte offset where it is (the body's length when the body ends too early)
	 * @param where "in k", "after vectors[0][1]", or empty at the top level
	 * @param found "the body ends", "'tru'", "':'", ...
	 * @param expected what JSON allows there: "a value", "',' or '}'", ...
	 */
	record Error(long offset, String where, String found, String expected) {
	}

	private static final Set<String> LITERALS = Set.of("true", "false", "null", "NaN", "Infinity", "INF");

	private static final Set<String> SIGNED_LITERALS = Set.of("Infinity", "INF");

	private enum State {

		/** A value must come: at the start, after ':' and after ',' in an array. */
		VALUE,
		/** Right after '[': a value or ']'. */
		VALUE_OR_CLOSE,
		/** Right after '{': a field name or '}'. */
		NAME_OR_CLOSE,
		/** After ',' in an object. */
		NAME,
		/** After a field name. */
		COLON,
		/** After a value inside an object or array. */
		COMMA_OR_CLOSE,
		/** After the top-level value: only whitespace. */
		END

	}

	/** An open object (with its current field name) or array (with its current element's index). */
	private static final class Level {

		final boolean object;

		@Nullable String name;

		int index;

		Level(boolean object) {
			this.object = object;
		}

	}

	/** Ends the reading at the first error. */
	private static final class Stop extends RuntimeException {

		private static final long serialVersionUID = 1L;

		final transient Error error;

		Stop(Error error) {
			super(null, null, false, false);
			this.error = error;
		}

	}

	private final byte[] body;

	private final Deque<Level> open = new ArrayDeque<>();

	private State state = State.VALUE;

	private JsonSyntax(byte[] body) {
		this.body = body;
	}

	/** The first error of {@code body}, or {@code null} when it is JSON. */
	static @Nullable Error firstError(byte[] body) {
		try {
			new JsonSyntax(body).read();
			return null;
		}
		catch (Stop stop) {
			return stop.error;
		}
	}

	private void read() {
		int n = this.body.length;
		int i = 0;
		while (true) {
			while (i < n && isWhitespace(this.body[i])) {
				i++;
			}
			if (i >= n) {
				if (this.state != State.END) {
					throw stop(n, "the body ends");
				}
				return;
			}
			i = step(i);
		}
	}

	/** Reads the token at {@code i} in the current state; returns the index after it. */
	private int step(int i) {
		byte b = this.body[i];
		Level top = this.open.peek();
		switch (this.state) {
			case END:
				throw stop(i, found(i));
			case COLON:
				if (b != ':') {
					throw stop(i, found(i));
				}
				this.state = State.VALUE;
				return i + 1;
			case COMMA_OR_CLOSE:
				if (b == ',') {
					if (top.object) {
						this.state = State.NAME;
					}
					else {
						top.index++;
						this.state = State.VALUE;
					}
					return i + 1;
				}
				if (b == (top.object ? '}' : ']')) {
					return close(i);
				}
				throw stop(i, found(i));
			case NAME_OR_CLOSE:
				if (b == '}') {
					return close(i);
				}
				return name(i);
			case NAME:
				return name(i);
			case VALUE_OR_CLOSE:
				if (b == ']') {
					return close(i);
				}
				return value(i);
			default:
				return value(i);
		}
	}

	private int name(int i) {
		if (this.body[i] != '"') {
			throw stop(i, found(i));
		}
		int end = string(i);
		this.open.peek().name = new String(this.body, i + 1, end - i - 2, StandardCharsets.UTF_8);
		this.state = State.COLON;
		return end;
	}

	private int close(int i) {
		this.open.pop();
		afterValue();
		return i + 1;
	}

	private void afterValue() {
		this.state = this.open.isEmpty() ? State.END : State.COMMA_OR_CLOSE;
	}

	private int value(int i) {
		byte b = this.body[i];
		if (b == '{') {
			this.open.push(new Level(true));
			this.state = State.NAME_OR_CLOSE;
			return i + 1;
		}
		if (b == '[') {
			this.open.push(new Level(false));
			this.state = State.VALUE_OR_CLOSE;
			return i + 1;
		}
		boolean string = b == '"';
		boolean number = b == '-' || (b >= '0' && b <= '9');
		if (!string && !number && !isLetter(b) && b != '+') {
			throw stop(i, found(i));
		}
		// Reading a value now (also right after '['): an error inside it is "in" its place.
		this.state = State.VALUE;
		int end;
		if (string) {
			end = string(i);
		}
		else if (number && !(b == '-' && i + 1 < this.body.length && isLetter(this.body[i + 1]))) {
			end = number(i);
		}
		else {
			end = literal(i);
		}
		afterValue();
		return end;
	}

	/** The index after the string starting at {@code i}. */
	private int string(int i) {
		int n = this.body.length;
		int j = i + 1;
		while (j < n) {
			byte b = this.body[j];
			if (b == '"') {
				return j + 1;
			}
			if (b == '\\') {
				if (j + 1 >= n) {
					break;
				}
				byte escaped = this.body[j + 1];
				if (escaped == 'u') {
					for (int h = j + 2; h < j + 6; h++) {
						if (h >= n) {
							throw stopInString(n, "the body ends inside a string", "its closing '\"'");
						}
						if (Character.digit(this.body[h], 16) < 0) {
							throw stopInString(h, "'" + (char) (this.body[h] & 0xff) + "' in a \\u escape",
									"four hexadecimal digits after \\u");
						}
					}
					j += 6;
					continue;
				}
				if ("\"\\/bfnrt".indexOf(escaped) < 0) {
					throw stopInString(j, "the escape '\\" + describeByte(escaped) + "' in a string",
							"one of \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX");
				}
				j += 2;
				continue;
			}
			if ((b & 0xff) < 0x20) {
				throw stopInString(j, String.format(Locale.ROOT, "an unescaped control character (U+%04X) in a string",
						b & 0xff), "it escaped, such as \\n for a line break");
			}
			j++;
		}
		throw stopInString(n, "the body ends inside a string", "its closing '\"'");
	}

	/** The index after the number starting at {@code i} (RFC 8259: no leading zeros, digits after '.'). */
	private int number(int i) {
		int n = this.body.length;
		int j = i;
		if (this.body[j] == '-') {
			j++;
		}
		j = digits(j, true);
		if (j < n && this.body[j] == '.') {
			j = digits(j + 1, false);
		}
		if (j < n && (this.body[j] == 'e' || this.body[j] == 'E')) {
			j++;
			if (j < n && (this.body[j] == '+' || this.body[j] == '-')) {
				j++;
			}
			j = digits(j, false);
		}
		return j;
	}

	/** At least one digit from {@code j}; an integer part of 0 takes no more digits. */
	private int digits(int j, boolean integerPart) {
		int n = this.body.length;
		if (j >= n) {
			throw stop(n, "the body ends inside a number", "a digit");
		}
		if (this.body[j] < '0' || this.body[j] > '9') {
			throw stop(j, found(j), "a digit");
		}
		if (integerPart && this.body[j] == '0') {
			return j + 1;
		}
		while (j < n && this.body[j] >= '0' && this.body[j] <= '9') {
			j++;
		}
		return j;
	}

	/** The index after the literal ({@code true}, {@code NaN}, {@code -Infinity}, ...) at {@code i}. */
	private int literal(int i) {
		int n = this.body.length;
		boolean signed = this.body[i] == '-' || this.body[i] == '+';
		int j = signed ? i + 1 : i;
		while (j < n && isLetter(this.body[j])) {
			j++;
		}
		String word = new String(this.body, signed ? i + 1 : i, j - (signed ? i + 1 : i), StandardCharsets.US_ASCII);
		if (signed ? !SIGNED_LITERALS.contains(word) : !LITERALS.contains(word)) {
			throw stop(i, found(i));
		}
		return j;
	}

	// ---- what to say --------------------------------------------------------------------------------

	private Stop stop(long offset, String found) {
		return stop(offset, found, expected());
	}

	private Stop stop(long offset, String found, String expected) {
		return new Stop(new Error(offset, where(), found, expected));
	}

	/** A string error: the string is the value (or name) being read, so the place is "in" it. */
	private Stop stopInString(long offset, String found, String expected) {
		String where = where();
		if (this.state == State.COLON || this.state == State.COMMA_OR_CLOSE) {
			where = where.replaceFirst("^after ", "in ");
		}
		return new Stop(new Error(offset, where, found, expected));
	}

	private String found(int i) {
		return "unexpected " + JsonErrors.character(this.body, i);
	}

	private String expected() {
		Level top = this.open.peek();
		switch (this.state) {
			case VALUE:
				return "a value";
			case VALUE_OR_CLOSE:
				return "a value or ']'";
			case NAME_OR_CLOSE:
				return "a field name in double quotes or '}'";
			case NAME:
				return "a field name in double quotes";
			case COLON:
				return "':'";
			case COMMA_OR_CLOSE:
				return "',' or " + (top.object ? "'}'" : "']'");
			default:
				return "the end of the body";
		}
	}

	/**
	 * Where the position is: "in k" while a value is expected or read, "after k" once it is complete or
	 * its name was read; the path of the object or array itself while a name or its first element is
	 * expected; empty at the top level.
	 */
	private String where() {
		switch (this.state) {
			case VALUE:
				return prefixed("in ", path(true));
			case COLON:
			case COMMA_OR_CLOSE:
				return prefixed("after ", path(true));
			case END:
				return "";
			default:
				return prefixed("in ", path(false));
		}
	}

	private static String prefixed(String prefix, String path) {
		return path.isEmpty() ? "" : prefix + path;
	}

	/** The JSON path of the open levels; with {@code current}, the innermost level's field or index too. */
	private String path(boolean current) {
		StringBuilder path = new StringBuilder();
		Iterator<Level> outermostFirst = this.open.descendingIterator();
		while (outermostFirst.hasNext()) {
			Level level = outermostFirst.next();
			if (!outermostFirst.hasNext() && !current) {
				break;
			}
			if (level.object) {
				if (level.name != null) {
					path.append(path.isEmpty() ? "" : ".").append(level.name);
				}
			}
			else {
				path.append('[').append(level.index).append(']');
			}
		}
		return path.toString();
	}

	private static boolean isWhitespace(byte b) {
		return b == ' ' || b == '\t' || b == '\n' || b == '\r';
	}

	private static boolean isLetter(byte b) {
		return (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z');
	}

	private static String describeByte(byte b) {
		return (b >= 0x20 && b < 0x7f) ? String.valueOf((char) b) : String.format(Locale.ROOT, "x%02X", b & 0xff);
	}

}
