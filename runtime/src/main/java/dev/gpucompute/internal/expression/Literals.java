package dev.gpucompute.internal.expression;

/**
 * Literals written so that C and Java read the same value: integers in decimal (the most negative
 * one as an expression, since {@code -2147483648} is a long in C), floating-point numbers in
 * hexadecimal, which both languages read exactly.
 */
final class Literals {

	private Literals() {
	}

	static String c(Ast.Literal literal) {
		return switch (literal.type()) {
			case BOOL -> literal.value.toString();
			case INT -> {
				long v = (Long) literal.value;
				yield (v == Integer.MIN_VALUE) ? "(-2147483647 - 1)" : (v < 0) ? "(" + v + ")" : Long.toString(v);
			}
			case LONG -> {
				long v = (Long) literal.value;
				yield (v == Long.MIN_VALUE) ? "(-9223372036854775807LL - 1LL)" : (v < 0) ? "(" + v + "LL)" : v + "LL";
			}
			case FLOAT -> hex(Float.toHexString((Float) literal.value), "f");
			case DOUBLE -> hex(Double.toHexString((Double) literal.value), "");
		};
	}

	static String java(Ast.Literal literal) {
		return switch (literal.type()) {
			case BOOL -> literal.value.toString();
			case INT -> {
				long v = (Long) literal.value;
				yield (v < 0) ? "(" + v + ")" : Long.toString(v);
			}
			case LONG -> {
				long v = (Long) literal.value;
				yield (v < 0) ? "(" + v + "L)" : v + "L";
			}
			case FLOAT -> hex(Float.toHexString((Float) literal.value), "f");
			case DOUBLE -> hex(Double.toHexString((Double) literal.value), "");
		};
	}

	/** {@code 0x1.8p0} with its suffix; a negative value in parentheses. */
	private static String hex(String text, String suffix) {
		if (text.contains("Infinity") || text.contains("NaN")) {
			throw new IllegalStateException("not a finite literal: " + text);
		}
		return text.startsWith("-") ? "(" + text + suffix + ")" : text + suffix;
	}

}
