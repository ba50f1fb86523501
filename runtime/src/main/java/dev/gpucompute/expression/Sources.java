package dev.gpucompute.expression;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import dev.gpucompute.KernelSource;
import dev.gpucompute.ParamType;
import dev.gpucompute.internal.expression.ExpressionError;
import dev.gpucompute.internal.expression.Generated;
import dev.gpucompute.internal.expression.JavaBodies;

/** Turns what the generator made into a {@link KernelSource}; shared by the two builders. */
final class Sources {

	/**
	 * The C++ dialect of the generated code, which writes floating-point literals in hexadecimal
	 * ({@code 0x1.8p0f}, exact in C and Java alike): C++17 syntax, which NVRTC refuses under
	 * {@code -std=c++14}. NVRTC's default, stated so that a context-wide {@code -std} does not apply.
	 */
	static final String DIALECT = "-std=c++17";

	/**
	 * The CUDA options that keep IEEE semantics: no contraction of a * b + c into one rounding,
	 * correctly rounded division and square root, subnormals kept. NVRTC's defaults except
	 * {@code -fmad}, stated in full so that nothing depends on a default, and so that the context's
	 * compile options that would change them ({@code -ftz=true}, {@code --use_fast_math}, ...) are
	 * left out for these kernels (the CUDA backend logs which).
	 */
	static final String[] IEEE_OPTIONS = { DIALECT, "-fmad=false", "-prec-div=true", "-prec-sqrt=true", "-ftz=false" };

	static final String[] FAST_MATH_OPTIONS = { DIALECT, "--use_fast_math" };

	/** Bodies by generated text and arithmetic, so that the same definition gives the same body object. */
	private static final Map<String, ExpressionBody> BODIES = new ConcurrentHashMap<>();

	private Sources() {
	}

	static KernelSource source(Generated generated, boolean fastMath) {
		String key = (fastMath ? "fast\n" : "ieee\n") + generated.cuda() + "\n" + generated.java();
		ExpressionBody body = BODIES.computeIfAbsent(key, (k) -> new ExpressionBody(
				JavaBodies.compile(generated.javaClass(), generated.java()),
				new ExpressionKernel(generated.name(), generated.paramNames(), generated.cuda(), generated.java(), fastMath, generated.ulps(),
						generated.inexactFunctions())));
		return KernelSource.named(generated.name())
			.params(generated.params().toArray(new ParamType[0]))
			.cuda(generated.cuda())
			.compileOptions(fastMath ? FAST_MATH_OPTIONS : IEEE_OPTIONS)
			.cpu(body);
	}

	/** The public exception for a mistake found in part {@code error.part()}, whose text {@code texts} gives. */
	static KernelExpressionException failure(String kernel, ExpressionError error, Map<String, String> texts) {
		String part = (error.part() != null) ? error.part() : "body";
		String text = texts.getOrDefault(part, "");
		return new KernelExpressionException(kernel, part, text, error.offset(), error.problem());
	}

	static String require(String text, String what) {
		if (text == null) {
			throw new NullPointerException(what);
		}
		return text;
	}

}
