package dev.gpucompute.kernels;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import dev.gpucompute.ParamType;

/**
 * Reads kernel parameter types from the two places a kernel file can declare them: the signature
 * of a {@code __global__} function in CUDA C source, and a {@code <name>.params} file.
 */
final class KernelSignatures {

	private static final Pattern COMMENTS = Pattern.compile("//[^\\n]*|/\\*.*?\\*/", Pattern.DOTALL);

	private static final Pattern QUALIFIERS = Pattern.compile("\\b(const|volatile|__restrict__|__restrict|restrict)\\b");

	private static final Pattern ANNOTATIONS = Pattern.compile("__launch_bounds__\\s*\\([^)]*\\)|__noinline__|__forceinline__");

	private static final Pattern GLOBAL_FUNCTION = Pattern.compile("__global__\\s+void\\s+([A-Za-z_][A-Za-z0-9_]*)\\s*\\(");

	/** Scalar C types the launcher can pass, after qualifiers are removed and spaces collapsed. */
	private static final Map<String, ParamType> SCALARS = Map.ofEntries(Map.entry("int", ParamType.INT),
			Map.entry("signed", ParamType.INT), Map.entry("signed int", ParamType.INT),
			Map.entry("unsigned", ParamType.INT), Map.entry("unsigned int", ParamType.INT),
			Map.entry("int32_t", ParamType.INT), Map.entry("uint32_t", ParamType.INT),
			Map.entry("long", ParamType.LONG), Map.entry("long int", ParamType.LONG),
			Map.entry("unsigned long", ParamType.LONG), Map.entry("long long", ParamType.LONG),
			Map.entry("long long int", ParamType.LONG), Map.entry("unsigned long long", ParamType.LONG),
			Map.entry("unsigned long long int", ParamType.LONG), Map.entry("int64_t", ParamType.LONG),
			Map.entry("uint64_t", ParamType.LONG), Map.entry("size_t", ParamType.LONG),
			Map.entry("ptrdiff_t", ParamType.LONG), Map.entry("float", ParamType.FLOAT),
			Map.entry("double", ParamType.DOUBLE));

	private KernelSignatures() {
	}

	/**
	 * The parameter types of the {@code __global__} function {@code name} in CUDA C source:
	 * pointers are {@link ParamType#BUFFER}s; {@code int}, {@code unsigned}, {@code int32_t} are
	 * {@code INT}; {@code long}, {@code long long}, {@code size_t}, {@code int64_t} are {@code LONG}
	 * (64-bit, as on Linux); {@code float} and {@code double} are themselves.
	 * @throws SignatureException naming what could not be read
	 */
	static List<ParamType> fromCudaSource(String source, String name) {
		String code = COMMENTS.matcher(source).replaceAll(" ");
		code = ANNOTATIONS.matcher(code).replaceAll(" ");
		Matcher matcher = Pattern
			.compile("__global__\\s+void\\s+" + Pattern.quote(name) + "\\s*\\(([^)]*)\\)", Pattern.DOTALL)
			.matcher(code);
		if (!matcher.find()) {
			List<String> defined = new ArrayList<>();
			Matcher global = GLOBAL_FUNCTION.matcher(code);
			while (global.find()) {
				defined.add(global.group(1));
			}
			String found = defined.isEmpty() ? "it defines no __global__ function at all"
					: "it defines " + String.join(", ", defined.stream().map((n) -> "'" + n + "'").toList());
			throw new SignatureException(KernelDefinitionException.Kind.MISSING_ENTRY_POINT,
					"it declares no '__global__ void " + name + "(...)' function (" + found + "); a kernel file must "
							+ "define an extern \"C\" kernel named like the file",
					defined);
		}
		String list = matcher.group(1).strip();
		List<ParamType> types = new ArrayList<>();
		if (list.isEmpty() || list.equals("void")) {
			return types;
		}
		int index = 0;
		for (String parameter : list.split(",")) {
			types.add(typeOf(parameter, index++));
		}
		return types;
	}

	private static ParamType typeOf(String parameter, int index) {
		String text = QUALIFIERS.matcher(parameter).replaceAll(" ").replaceAll("\\s+", " ").strip();
		if (text.contains("*") || text.contains("[")) {
			return ParamType.BUFFER;
		}
		int lastSpace = text.lastIndexOf(' ');
		if (lastSpace < 0) {
			throw new SignatureException(KernelDefinitionException.Kind.UNSUPPORTED_PARAMETER_TYPE,
					"parameter " + index + " ('" + parameter.strip() + "') has no name", List.of());
		}
		String type = text.substring(0, lastSpace).strip();
		ParamType mapped = SCALARS.get(type);
		if (mapped == null) {
			throw new SignatureException(KernelDefinitionException.Kind.UNSUPPORTED_PARAMETER_TYPE,
					"parameter " + index + " ('" + parameter.strip() + "') has type '" + type
							+ "', which the launcher cannot pass; supported are pointers (BUFFER), int, long long, float, "
							+ "double and their aliases",
					List.of());
		}
		return mapped;
	}

	/**
	 * The types listed in a {@code .params} file: names of {@link ParamType} constants (any case)
	 * separated by commas or white space; {@code #} starts a comment. An empty file means no
	 * parameters.
	 * @throws IllegalArgumentException for an unknown type name
	 */
	static List<ParamType> fromParamsFile(String content) {
		List<ParamType> types = new ArrayList<>();
		for (String line : content.split("\\R")) {
			int hash = line.indexOf('#');
			String text = (hash >= 0) ? line.substring(0, hash) : line;
			for (String token : text.split("[,\\s]+")) {
				if (token.isEmpty()) {
					continue;
				}
				try {
					types.add(ParamType.valueOf(token.toUpperCase(Locale.ROOT)));
				}
				catch (IllegalArgumentException ex) {
					throw new IllegalArgumentException("'" + token + "' is not a parameter type; use int, long, float, "
							+ "double or buffer");
				}
			}
		}
		return types;
	}

	/** A CUDA C signature that cannot be read, and why. */
	static final class SignatureException extends IllegalArgumentException {

		private static final long serialVersionUID = 1L;

		private final KernelDefinitionException.Kind kind;

		private final List<String> definedFunctions;

		SignatureException(KernelDefinitionException.Kind kind, String message, List<String> definedFunctions) {
			super(message);
			this.kind = kind;
			this.definedFunctions = List.copyOf(definedFunctions);
		}

		KernelDefinitionException.Kind kind() {
			return this.kind;
		}

		/** The {@code __global__} functions the source does define (for a missing entry point). */
		List<String> definedFunctions() {
			return this.definedFunctions;
		}

	}

}
