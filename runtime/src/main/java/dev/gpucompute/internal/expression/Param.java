package dev.gpucompute.internal.expression;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;

import org.jspecify.annotations.Nullable;

/**
 * One declared parameter of an expression kernel: a scalar ({@code float a}) or an array
 * ({@code float[] x}, {@code float[m] table}), an input or an output.
 *
 * @param name its name
 * @param type its type, or its elements' type
 * @param array whether it is an array (a buffer argument)
 * @param output whether the kernel writes it (an array of {@code out(...)})
 * @param length for an array, the scalar parameter that holds its length; {@code null} for the
 * kernel's element count
 * @param offset where it is declared in its declaration text
 */
public record Param(String name, Type type, boolean array, boolean output, @Nullable String length, int offset) {

	/**
	 * Reads a comma-separated list of declarations: {@code float a}, {@code float[] x},
	 * {@code int[m] table} (an array whose length is the int parameter {@code m}).
	 * @param text the declarations
	 * @param output whether these are outputs (then only arrays)
	 * @throws ExpressionError on a malformed declaration
	 */
	public static List<Param> parse(String text, boolean output) {
		List<Param> params = new ArrayList<>();
		List<Lexer.Token> tokens = Lexer.tokens(text);
		int p = 0;
		if (tokens.get(0).kind() == Lexer.Kind.END) {
			return params;
		}
		while (true) {
			Lexer.Token typeToken = tokens.get(p++);
			Type type = (typeToken.kind() == Lexer.Kind.IDENT) ? Type.named(typeToken.text()) : null;
			if (type == null || type == Type.BOOL) {
				throw new ExpressionError(typeToken.offset(), "expected a type (int, long, float or double) to start a "
						+ "declaration such as 'float a' or 'float[] x', found " + typeToken.describe());
			}
			boolean array = false;
			String length = null;
			if (tokens.get(p).is("[")) {
				array = true;
				p++;
				if (tokens.get(p).kind() == Lexer.Kind.IDENT) {
					length = tokens.get(p++).text();
				}
				if (!tokens.get(p).is("]")) {
					throw new ExpressionError(tokens.get(p).offset(), "expected ']' in an array declaration ('float[] x' "
							+ "or 'float[m] x' with m an int parameter), found " + tokens.get(p).describe());
				}
				p++;
			}
			Lexer.Token name = tokens.get(p++);
			if (name.kind() != Lexer.Kind.IDENT) {
				throw new ExpressionError(name.offset(), "expected a name after '" + type.word() + (array ? "[]" : "")
						+ "', found " + name.describe());
			}
			Names.check(name.text(), name.offset(), "a parameter");
			if (output && !array) {
				throw new ExpressionError(typeToken.offset(), "an output is an array: write '" + type.word() + "[] "
						+ name.text() + "'");
			}
			params.add(new Param(name.text(), type, array, output, length, name.offset()));
			Lexer.Token after = tokens.get(p++);
			if (after.kind() == Lexer.Kind.END) {
				return params;
			}
			if (!after.is(",")) {
				throw new ExpressionError(after.offset(), "expected ',' between declarations, found " + after.describe());
			}
		}
	}

	/** Fails on a name used twice and on an array length that is not an int scalar parameter. */
	public static void checkAll(List<Param> params, Set<String> builtins) {
		java.util.Map<String, Param> byName = new java.util.HashMap<>();
		for (Param param : params) {
			if (builtins.contains(param.name())) {
				throw new ExpressionError(param.offset(), "'" + param.name() + "' is a name the kernel defines itself; "
						+ "choose another");
			}
			if (byName.put(param.name(), param) != null) {
				throw new ExpressionError(param.offset(), "'" + param.name() + "' is declared twice");
			}
		}
		for (Param param : params) {
			if (param.length() != null) {
				Param length = byName.get(param.length());
				if (length == null || length.array() || length.type() != Type.INT) {
					throw new ExpressionError(param.offset(), "the length of '" + param.name() + "' must be the name of an "
							+ "int parameter, and '" + param.length() + "' is " + ((length == null) ? "not declared"
									: "a " + length.type().word() + (length.array() ? " array" : "")));
				}
			}
		}
	}

	/** The declaration as written in the language. */
	public String declaration() {
		return this.type.word() + (this.array ? "[" + ((this.length != null) ? this.length : "") + "]" : "") + " " + this.name;
	}

}
