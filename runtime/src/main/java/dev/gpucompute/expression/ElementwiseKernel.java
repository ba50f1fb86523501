package dev.gpucompute.expression;

import java.util.LinkedHashMap;
import java.util.Map;

import dev.gpucompute.KernelSource;
import dev.gpucompute.internal.expression.ElementwiseGenerator;
import dev.gpucompute.internal.expression.ExpressionError;
import dev.gpucompute.internal.expression.Generated;
import org.jspecify.annotations.Nullable;

/**
 * An elementwise kernel written once, as a small body run for every element index {@code i} of
 * {@code [0, n)}; {@link #build()} generates its CUDA C (compiled by the CUDA backend like any
 * kernel) and its Java body for the CPU backend (compiled now), and returns an ordinary
 * {@link KernelSource}: launch it, load it, declare it as a bean or name it on
 * {@code GpuContext.builder().kernels(...)} like a hand-written kernel.
 *
 * <pre>{@code
 * KernelSource saxpy = ElementwiseKernel.named("saxpy")
 *     .in("float a, float[] x")
 *     .out("float[] y")
 *     .body("y = a * x + y")
 *     .build();
 * launcher.launch(saxpy, LaunchConfig.linear(n, 256), n, 2.5f, x, y);   // parameters: int n, then in, then out
 * }</pre>
 *
 * <p><b>Parameters.</b> The kernel takes {@code int n} (the element count), then the declarations of
 * {@link #in(String)}, then those of {@link #out(String)}: scalars ({@code float a}: {@code int},
 * {@code long}, {@code float}, {@code double}) and arrays ({@code float[] x}, a buffer argument of at
 * least {@code n} elements; {@code float[m] table} has the length of the int parameter {@code m}).
 * In the body an array's name alone is its element at {@code i}; an input array can also be read at
 * any index, {@code x[i - 1]}, which gives 0 outside {@code [0, length)}. An output is written only at
 * {@code i} ({@code y = ...}, {@code y[i] = ...}) and read only there, so elements are independent
 * and the launch configuration and the order of threads cannot change a result; an array passed as
 * an output must not also be passed as another array argument.
 *
 * <p><b>The body</b> is statements of a small language, the same in C and Java: local variables
 * ({@code float t = x * x;}), assignments ({@code =}, {@code +=}, ...), {@code if}/{@code else},
 * the operators of C and Java with their precedence, the ternary {@code ?:}, casts, and the functions
 * of the guide (docs/guide.md): {@code sqrt}, {@code fabs}, {@code fmin}, {@code exp}, {@code pow},
 * {@code tanh}, .... Every operation is defined for every input, identically on both backends:
 * integers wrap, {@code x / 0} is 0 and {@code x % 0} is {@code x}, shift counts are masked,
 * float-to-int conversions saturate with NaN giving 0. Floating-point arithmetic is IEEE 754 on both:
 * the CUDA code is compiled without contracting multiply-adds and with IEEE division and square root,
 * so the backends give the same bits, except for transcendental functions (within
 * {@link ExpressionKernel#ulps()}) and NaN's sign and payload bits.
 *
 * <p>The expressions are code the application supplies, like a kernel's CUDA source: never build
 * one from request data. Each definition's Java body is compiled once and kept while the runtime is
 * loaded, so define kernels as constants or beans, not per request.
 *
 * <p>Immutable: every method returns a new definition. {@link #build()} parses and checks eagerly,
 * so a mistake fails at definition with a {@link KernelExpressionException} naming its line and
 * column; the same definition built twice gives a source with the same CPU body, compiled once.
 */
public final class ElementwiseKernel {

	private final String name;

	private final String in;

	private final String out;

	private final @Nullable String body;

	private final boolean fastMath;

	private ElementwiseKernel(String name, String in, String out, @Nullable String body, boolean fastMath) {
		this.name = name;
		this.in = in;
		this.out = out;
		this.body = body;
		this.fastMath = fastMath;
	}

	/**
	 * Starts the definition of a kernel.
	 * @param name a C identifier: the CUDA entry point and the kernel's name in the launcher
	 */
	public static ElementwiseKernel named(String name) {
		KernelSource.named(name); // checks the name
		return new ElementwiseKernel(name, "", "", null, false);
	}

	/**
	 * The inputs, after {@code int n}: scalars and arrays, comma-separated, such as
	 * {@code "float a, float[] x, int m, float[m] table"}.
	 */
	public ElementwiseKernel in(String declarations) {
		return new ElementwiseKernel(this.name, Sources.require(declarations, "declarations"), this.out, this.body,
				this.fastMath);
	}

	/** The outputs, after the inputs: arrays the body writes at {@code i} (and may read there), such as {@code "float[] y"}. */
	public ElementwiseKernel out(String declarations) {
		return new ElementwiseKernel(this.name, this.in, Sources.require(declarations, "declarations"), this.body,
				this.fastMath);
	}

	/** The statements run for every element index {@code i}, such as {@code "y = a * x + y"}. */
	public ElementwiseKernel body(String statements) {
		return new ElementwiseKernel(this.name, this.in, this.out, Sources.require(statements, "statements"),
				this.fastMath);
	}

	/**
	 * Compiles the CUDA code with {@code --use_fast_math}: faster transcendental functions, division
	 * and square root, contracted multiply-adds and subnormals flushed to zero, <b>giving up bit parity</b>
	 * with the CPU backend, whose body stays IEEE. {@link ExpressionKernel#bitExact()} is then false and
	 * no bound is stated.
	 */
	public ElementwiseKernel fastMathGivingUpBitParity() {
		return new ElementwiseKernel(this.name, this.in, this.out, this.body, true);
	}

	/**
	 * Parses and checks the definition, generates both backends' code and compiles the Java body (once
	 * per definition text).
	 * @return the kernel's source: parameters {@code int n}, then the inputs, then the outputs
	 * @throws KernelExpressionException on a mistake, with its position
	 * @throws IllegalStateException when no body was given
	 */
	public KernelSource build() {
		if (this.body == null) {
			throw new IllegalStateException("Kernel '" + this.name + "' has no body: give it one with body(\"y = ...\")");
		}
		Generated generated;
		try {
			generated = ElementwiseGenerator.generate(this.name, this.in, this.out, this.body);
		}
		catch (ExpressionError ex) {
			Map<String, String> texts = new LinkedHashMap<>();
			texts.put("in", this.in);
			texts.put("out", this.out);
			texts.put("body", this.body);
			throw Sources.failure(this.name, ex, texts);
		}
		return Sources.source(generated, this.fastMath);
	}

	@Override
	public String toString() {
		return "ElementwiseKernel[" + this.name + "(int n" + (this.in.isBlank() ? "" : ", " + this.in)
				+ (this.out.isBlank() ? "" : ", " + this.out) + "): " + this.body + "]";
	}

}
