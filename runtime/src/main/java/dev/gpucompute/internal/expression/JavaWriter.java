package dev.gpucompute.internal.expression;

import java.util.List;

import dev.gpucompute.internal.expression.Ast.Expr;
import dev.gpucompute.internal.expression.Ast.Stmt;

/**
 * Writes checked expressions and statements as Java, reading arrays from {@code java.nio} buffers
 * by absolute index. Java's own semantics are the language's for integers and conversions; where C
 * and CUDA define something else that the language keeps (fmin and fmax ignore NaN, pow(1, NaN) is
 * 1), a helper of {@link #HELPERS} gives CUDA's result.
 */
final class JavaWriter {

	/** Private static helpers of every generated class; small enough for the JIT to inline. */
	static final String HELPERS = """
				private static int gc_div(int a, int b) { return (b == 0) ? 0 : a / b; }
				private static long gc_div(long a, long b) { return (b == 0L) ? 0L : a / b; }

				private static int gc_rem(int a, int b) { return (b == 0) ? a : a % b; }
				private static long gc_rem(long a, long b) { return (b == 0L) ? a : a % b; }

				private static float gc_fmin(float a, float b) { return (a != a) ? b : (b != b) ? a : Math.min(a, b); }
				private static double gc_fmin(double a, double b) { return (a != a) ? b : (b != b) ? a : Math.min(a, b); }

				private static float gc_fmax(float a, float b) { return (a != a) ? b : (b != b) ? a : Math.max(a, b); }
				private static double gc_fmax(double a, double b) { return (a != a) ? b : (b != b) ? a : Math.max(a, b); }

				private static float gc_copysign(float x, float y) { return (y != y) ? Math.abs(x) : Math.copySign(x, y); }
				private static double gc_copysign(double x, double y) { return (y != y) ? Math.abs(x) : Math.copySign(x, y); }

				private static double gc_trunc(double x) { return (x < 0.0) ? Math.ceil(x) : Math.floor(x); }

				private static double gc_round(double x) {
					double a = Math.abs(x);
					if (!(a < 0x1p52)) {
						return x;
					}
					double t = Math.floor(a);
					return Math.copySign((a - t >= 0.5) ? t + 1.0 : t, x);
				}

				private static double gc_pow(double x, double y) {
					// C's pow, where Java's differs: pow(1, y) and pow(-1, +-inf) are 1, for y NaN too.
					if (x == 1.0 || y == 0.0) {
						return 1.0;
					}
					if (x == -1.0 && Double.isInfinite(y)) {
						return 1.0;
					}
					return Math.pow(x, y);
				}

				private static double gc_log2(double x) {
					if (x > 0.0 && x < Double.POSITIVE_INFINITY && Math.getExponent(x) >= Double.MIN_EXPONENT
							&& (Double.doubleToRawLongBits(x) & 0xfffffffffffffL) == 0L) {
						return Math.getExponent(x);
					}
					return Math.log(x) / Math.log(2.0);
				}

				private static double gc_exp2(double x) { return Math.pow(2.0, x); }

				private static int gc_ld(java.nio.IntBuffer p, int j, int n) { return (j >= 0 && j < n) ? p.get(j) : 0; }
				private static long gc_ld(java.nio.LongBuffer p, int j, int n) { return (j >= 0 && j < n) ? p.get(j) : 0L; }
				private static float gc_ld(java.nio.FloatBuffer p, int j, int n) { return (j >= 0 && j < n) ? p.get(j) : 0.0f; }
				private static double gc_ld(java.nio.DoubleBuffer p, int j, int n) { return (j >= 0 && j < n) ? p.get(j) : 0.0; }
			""";

	private JavaWriter() {
	}

	/**
	 * The helpers of {@link #HELPERS} that {@code code} calls: a kernel's class carries only those,
	 * since Janino's compile time grows with the source.
	 */
	static String helpersFor(String code) {
		return Helpers.used(HELPERS, code);
	}

	/** Java's way of writing statements: tab indents, Java's type names, {@code y.put(i, v)} on the buffer. */
	private static final Statements.Dialect DIALECT = new Statements.Dialect() {

		@Override
		public String step() {
			return "\t";
		}

		@Override
		public String type(Type type) {
			return type.java();
		}

		@Override
		public String expr(Expr expr) {
			return JavaWriter.expr(expr);
		}

		@Override
		public String assignElement(String target, String value) {
			return target + ".put(i, " + value + ")";
		}

	};

	static void statements(StringBuilder out, List<Stmt> statements, String indent) {
		Statements.write(out, statements, indent, DIALECT);
	}

	static String expr(Expr expr) {
		if (expr instanceof Ast.Literal literal) {
			return Literals.java(literal);
		}
		if (expr instanceof Ast.Name name) {
			return (name.kind() == Ast.NameKind.ELEMENT) ? name.name + ".get(i)" : name.name;
		}
		if (expr instanceof Ast.Index index) {
			return "gc_ld(" + index.array + ", " + expr(index.index) + ", " + ((index.length != null) ? index.length : "n")
					+ ")";
		}
		if (expr instanceof Ast.Unary unary) {
			return "(" + unary.op + expr(unary.operand) + ")";
		}
		if (expr instanceof Ast.Binary binary) {
			String l = expr(binary.left);
			String r = expr(binary.right);
			if (binary.left.type().isInteger() && (binary.op.equals("/") || binary.op.equals("%"))) {
				return (binary.op.equals("/") ? "gc_div(" : "gc_rem(") + l + ", " + r + ")";
			}
			return "(" + l + " " + binary.op + " " + r + ")";
		}
		if (expr instanceof Ast.Conditional conditional) {
			return "(" + expr(conditional.condition) + " ? " + expr(conditional.then) + " : " + expr(conditional.otherwise)
					+ ")";
		}
		if (expr instanceof Ast.Cast cast) {
			return (cast.operand.type() == cast.target) ? expr(cast.operand)
					: "((" + cast.target.java() + ") " + expr(cast.operand) + ")";
		}
		if (expr instanceof Ast.Call call) {
			return call(call);
		}
		throw new IllegalStateException("unknown expression " + expr);
	}

	private static String call(Ast.Call call) {
		Type type = call.args.get(0).type();
		boolean single = type == Type.FLOAT;
		String[] args = new String[call.args.size()];
		for (int k = 0; k < args.length; k++) {
			args[k] = expr(call.args.get(k));
		}
		String joined = String.join(", ", args);
		String name = call.resolved().name();
		String boxed = single ? "Float" : "Double";
		return switch (name) {
			case "abs", "fabs" -> "Math.abs(" + joined + ")";
			case "min", "max" -> type.isInteger() ? "Math." + name + "(" + joined + ")" : "gc_f" + name + "(" + joined + ")";
			case "fmin", "fmax", "copysign" -> "gc_" + name + "(" + joined + ")";
			case "fmod" -> "(" + args[0] + " % " + args[1] + ")";
			case "fma" -> "Math.fma(" + joined + ")";
			case "isnan" -> boxed + ".isNaN(" + joined + ")";
			case "isinf" -> boxed + ".isInfinite(" + joined + ")";
			case "isfinite" -> boxed + ".isFinite(" + joined + ")";
			default -> viaDouble(single, math(name), args);
		};
	}

	/** The Java expression of a function computed in double: {@code Math.sqrt}, a helper, ... */
	private static String math(String name) {
		return switch (name) {
			case "trunc" -> "gc_trunc";
			case "round" -> "gc_round";
			case "pow" -> "gc_pow";
			case "log2" -> "gc_log2";
			case "exp2" -> "gc_exp2";
			default -> "Math." + name;
		};
	}

	/** {@code f(args)} in double; for float arguments converted up and the result rounded back. */
	private static String viaDouble(boolean single, String function, String[] args) {
		StringBuilder call = new StringBuilder(function).append('(');
		for (int k = 0; k < args.length; k++) {
			call.append((k > 0) ? ", " : "").append(single ? "(double) " : "").append(args[k]);
		}
		call.append(')');
		return single ? "((float) " + call + ")" : call.toString();
	}

}
