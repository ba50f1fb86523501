package dev.gpucompute.internal.expression;

import java.util.Set;
import java.util.regex.Pattern;

/** Which names an expression kernel may give its parameters and local variables. */
final class Names {

	private static final Pattern IDENTIFIER = Pattern.compile("[A-Za-z][A-Za-z0-9_]*");

	/**
	 * Words of C, C++, CUDA and Java, and names the generated code uses: a parameter or local with one
	 * of these names would not compile, or would change what the generated code means, on one side
	 * ({@code java} and {@code dev} would hide the packages the generated Java names in full).
	 */
	private static final Set<String> RESERVED = Set.of("alignas", "alignof", "and", "and_eq", "asm", "auto", "bitand",
			"bitor", "bool", "break", "case", "catch", "char", "char8_t", "char16_t", "char32_t", "class", "compl",
			"concept", "const", "consteval", "constexpr", "constinit", "const_cast", "continue", "co_await", "co_return",
			"co_yield", "decltype", "default", "delete", "do", "double", "dynamic_cast", "else", "enum", "explicit",
			"export", "extern", "false", "float", "for", "friend", "goto", "if", "inline", "int", "long", "mutable",
			"namespace", "new", "noexcept", "not", "not_eq", "nullptr", "operator", "or", "or_eq", "private", "protected",
			"public", "register", "reinterpret_cast", "requires", "restrict", "return", "short", "signed", "sizeof",
			"static", "static_assert", "static_cast", "struct", "switch", "template", "this", "thread_local", "throw",
			"true", "try", "typedef", "typeid", "typename", "union", "unsigned", "using", "virtual", "void", "volatile",
			"wchar_t", "while", "xor", "xor_eq", "abstract", "assert", "boolean", "byte", "extends", "final", "finally",
			"implements", "import", "instanceof", "interface", "native", "package", "strictfp", "super", "synchronized",
			"throws", "transient", "var", "yield", "record", "sealed", "permits", "null", "java", "dev", "Math", "Float",
			"Double", "Integer", "Long", "Object", "String", "System", "threadIdx", "blockIdx", "blockDim", "gridDim",
			"warpSize", "isnan", "isinf", "isfinite", "signbit", "NAN", "INFINITY");

	private Names() {
	}

	/**
	 * Fails unless {@code name} can name a parameter or a local.
	 * @param what "a parameter", "a local variable"
	 */
	static void check(String name, int offset, String what) {
		if (!IDENTIFIER.matcher(name).matches()) {
			throw new ExpressionError(offset, "'" + name + "' cannot name " + what + ": a name starts with a letter and "
					+ "has letters, digits and '_'");
		}
		if (name.startsWith("gc_")) {
			throw new ExpressionError(offset, "'" + name + "' cannot name " + what + ": names starting with 'gc_' are "
					+ "kept for the generated code");
		}
		if (RESERVED.contains(name) || Type.named(name) != null) {
			throw new ExpressionError(offset, "'" + name + "' cannot name " + what + ": it is a word of C, CUDA or Java");
		}
		if (Functions.find(name) != null || Functions.find(stripF(name)) != null) {
			throw new ExpressionError(offset, "'" + name + "' cannot name " + what + ": it is the name of a function");
		}
	}

	/** {@code sqrtf} for {@code sqrt}: CUDA's float variants, which the generated code calls. */
	private static String stripF(String name) {
		return name.endsWith("f") ? name.substring(0, name.length() - 1) : name;
	}

}
