package dev.gpucompute.internal.expression;

import java.util.ArrayList;
import java.util.List;

import org.jspecify.annotations.Nullable;

/** Splits an expression into tokens; numbers are read into their values here, with their exact type. */
final class Lexer {

	enum Kind {

		IDENT, NUMBER, OP, END

	}

	/**
	 * One token.
	 * @param kind what it is
	 * @param text its text
	 * @param offset where it starts in the source
	 * @param type for a number, its type
	 * @param value for a number, its value: a {@code Long} for int and long, a {@code Double} or {@code Float}
	 */
	record Token(Kind kind, String text, int offset, @Nullable Type type, @Nullable Object value) {

		boolean is(String op) {
			return this.kind == Kind.OP && this.text.equals(op);
		}

		String describe() {
			return (this.kind == Kind.END) ? "the end" : "'" + this.text + "'";
		}

	}

	private static final String[] OPERATORS = { ">>>", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||", "+=", "-=", "*=",
			"/=", "%=", "+", "-", "*", "/", "%", "<", ">", "!", "~", "&", "|", "^", "?", ":", "(", ")", "[", "]", "{", "}",
			",", ";", "=" };

	private Lexer() {
	}

	static List<Token> tokens(String text) {
		List<Token> tokens = new ArrayList<>();
		int p = 0;
		int length = text.length();
		while (true) {
			p = skipSpace(text, p);
			if (p >= length) {
				tokens.add(new Token(Kind.END, "", length, null, null));
				return tokens;
			}
			char c = text.charAt(p);
			if (Character.isLetter(c) || c == '_') {
				int start = p;
				while (p < length && (Character.isLetterOrDigit(text.charAt(p)) || text.charAt(p) == '_')) {
					p++;
				}
				tokens.add(new Token(Kind.IDENT, text.substring(start, p), start, null, null));
			}
			else if (Character.isDigit(c) || (c == '.' && p + 1 < length && Character.isDigit(text.charAt(p + 1)))) {
				Token number = number(text, p);
				tokens.add(number);
				p += number.text().length();
			}
			else {
				String op = null;
				for (String candidate : OPERATORS) {
					if (text.startsWith(candidate, p)) {
						op = candidate;
						break;
					}
				}
				if (op == null) {
					throw new ExpressionError(p, "unexpected character '" + c + "'");
				}
				tokens.add(new Token(Kind.OP, op, p, null, null));
				p += op.length();
			}
		}
	}

	private static int skipSpace(String text, int p) {
		int length = text.length();
		while (p < length) {
			char c = text.charAt(p);
			if (Character.isWhitespace(c)) {
				p++;
			}
			else if (text.startsWith("//", p)) {
				while (p < length && text.charAt(p) != '\n') {
					p++;
				}
			}
			else if (text.startsWith("/*", p)) {
				int end = text.indexOf("*/", p + 2);
				if (end < 0) {
					throw new ExpressionError(p, "a comment that is never closed (no '*/')");
				}
				p = end + 2;
			}
			else {
				break;
			}
		}
		return p;
	}

	/**
	 * A number: {@code 12}, {@code 0x1F}, {@code 12L} (long), {@code 1.5}, {@code 1e-3} (double),
	 * {@code 1.5f}, {@code 2f} (float). Integers too large for their type are refused here, except
	 * 2147483648 and 9223372036854775808L, which only a minus sign in front of them makes valid (the
	 * parser checks that).
	 */
	private static Token number(String text, int start) {
		int length = text.length();
		int p = start;
		if (text.startsWith("0x", p) || text.startsWith("0X", p)) {
			p += 2;
			int digits = p;
			while (p < length && Character.digit(text.charAt(p), 16) >= 0) {
				p++;
			}
			if (p == digits) {
				throw new ExpressionError(start, "a hexadecimal number needs digits after '0x'");
			}
			boolean isLong = p < length && (text.charAt(p) == 'L' || text.charAt(p) == 'l');
			String hex = text.substring(digits, p);
			if (isLong) {
				p++;
			}
			checkEnd(text, start, p);
			if (hex.length() > (isLong ? 16 : 8)) {
				throw new ExpressionError(start, "the number " + text.substring(start, p) + " is too large for "
						+ (isLong ? "a long" : "an int"));
			}
			long bits = Long.parseUnsignedLong(hex, 16);
			long value = isLong ? bits : (int) bits;
			return new Token(Kind.NUMBER, text.substring(start, p), start, isLong ? Type.LONG : Type.INT, value);
		}
		while (p < length && Character.isDigit(text.charAt(p))) {
			p++;
		}
		boolean floating = false;
		if (p < length && text.charAt(p) == '.') {
			floating = true;
			p++;
			while (p < length && Character.isDigit(text.charAt(p))) {
				p++;
			}
		}
		if (p < length && (text.charAt(p) == 'e' || text.charAt(p) == 'E')) {
			floating = true;
			p++;
			if (p < length && (text.charAt(p) == '+' || text.charAt(p) == '-')) {
				p++;
			}
			int digits = p;
			while (p < length && Character.isDigit(text.charAt(p))) {
				p++;
			}
			if (p == digits) {
				throw new ExpressionError(start, "an exponent needs digits");
			}
		}
		String digits = text.substring(start, p);
		if (p < length && (text.charAt(p) == 'f' || text.charAt(p) == 'F')) {
			p++;
			checkEnd(text, start, p);
			float value = Float.parseFloat(digits);
			if (Float.isInfinite(value)) {
				throw new ExpressionError(start, "the number " + text.substring(start, p) + " is too large for a float");
			}
			return new Token(Kind.NUMBER, text.substring(start, p), start, Type.FLOAT, value);
		}
		if (floating) {
			checkEnd(text, start, p);
			double value = Double.parseDouble(digits);
			if (Double.isInfinite(value)) {
				throw new ExpressionError(start, "the number " + text.substring(start, p) + " is too large for a double");
			}
			return new Token(Kind.NUMBER, text.substring(start, p), start, Type.DOUBLE, value);
		}
		boolean isLong = p < length && (text.charAt(p) == 'L' || text.charAt(p) == 'l');
		if (isLong) {
			p++;
		}
		checkEnd(text, start, p);
		java.math.BigInteger value = new java.math.BigInteger(digits);
		java.math.BigInteger limit = java.math.BigInteger.ONE.shiftLeft(isLong ? 63 : 31);
		if (value.compareTo(limit) > 0) {
			throw new ExpressionError(start, "the number " + text.substring(start, p) + " is too large for "
					+ (isLong ? "a long" : "an int (write " + digits + "L for a long)"));
		}
		// 2^31 (2^63) stays as a marker the parser accepts only after a minus sign.
		long parsed = value.equals(limit) ? (isLong ? Long.MIN_VALUE : Integer.MIN_VALUE) : value.longValue();
		return new Token(Kind.NUMBER, text.substring(start, p), start, isLong ? Type.LONG : Type.INT,
				value.equals(limit) ? new Overflow(parsed) : (Object) parsed);
	}

	/** The value 2^31 or 2^63: valid only negated, where it is the type's minimum. */
	record Overflow(long minimum) {
	}

	private static void checkEnd(String text, int start, int p) {
		if (p < text.length() && (Character.isLetterOrDigit(text.charAt(p)) || text.charAt(p) == '_'
				|| text.charAt(p) == '.')) {
			throw new ExpressionError(start, "'" + text.substring(start, p + 1) + "' is not a number");
		}
	}

}
