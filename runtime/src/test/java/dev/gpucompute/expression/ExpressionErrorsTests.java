package dev.gpucompute.expression;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.assertj.core.api.AbstractThrowableAssert;
import org.junit.jupiter.api.Test;

/**
 * Mistakes fail at definition, naming the part, the line and the column, quoting the line with a
 * caret, and saying what is wrong in the user's terms.
 */
class ExpressionErrorsTests {

	private static AbstractThrowableAssert<?, ? extends Throwable> body(String in, String out, String body) {
		return assertThatThrownBy(() -> ElementwiseKernel.named("k").in(in).out(out).body(body).build())
			.isInstanceOf(KernelExpressionException.class);
	}

	@Test
	void aParameterOfTheWrongTypeSaysWhichAndHowToConvert() {
		body("int m, float[] x", "float[] y", "y = sqrt(m)")
			.hasMessage("Kernel 'k', body, line 1, column 10: 'sqrt' takes float or double arguments, and argument 1 is an "
					+ "int (the parameter 'int m'); convert it, such as 'sqrt((double) ...)'\n  y = sqrt(m)\n           ^");
	}

	@Test
	void aValueThatDoesNotFitItsTargetNeedsACast() {
		body("double d, float[] x", "float[] y", "y = x * d")
			.hasMessageContaining("body, line 1, column 5: the value of 'y' must be a float, got a double; convert it with a "
					+ "cast, such as '(float) ...'");
	}

	@Test
	void anInputCannotBeAssignedNorAnOutputReadAwayFromI() {
		body("float[] x", "float[] y", "x = 1.0f").hasMessageContaining("'x' is an input and cannot be assigned");
		body("float[] x", "float[] y", "y = 1.0f;\ny[i + 1] = 2.0f").hasMessageContaining("line 2, column 3: an output is "
				+ "written only at the element index");
		body("float[] x", "float[] y", "y = y[i - 1]").hasMessageContaining("'y' is written by this kernel, so it is read "
				+ "only at the element index");
	}

	@Test
	void syntaxMistakesPointAtTheirToken() {
		body("float[] x", "float[] y", "float t = (x + 1;\ny = t")
			.hasMessageContaining("body, line 1, column 17: expected ')' to close '(', found ';'");
		body("float[] x", "float[] y", "y = x +").hasMessageContaining("column 8: the expression ends too early");
		body("float[] x", "float[] y", "y = x @ 2").hasMessageContaining("column 7: unexpected character '@'");
		body("float[] x", "float[] y", "x * 2").hasMessageContaining("a statement must assign a value");
	}

	@Test
	void undefinedNamesListTheNamesThatAre() {
		body("float a, float[] x", "float[] y", "y = b * x")
			.hasMessageContaining("'b' is not defined (the names here are: a, i, n, x, y)");
	}

	@Test
	void conditionsAreBoolsAndBoolsAreNotNumbers() {
		body("int[] k", "int[] y", "if (k) y = 1").hasMessageContaining("the condition of 'if' must be a bool");
		body("float[] x", "int[] y", "y = (int) (x > 0)").hasMessageContaining("cannot convert a bool to an int");
		body("int[] k", "int[] y", "y = k & true").hasMessageContaining("'&' combines the bits of ints or longs");
	}

	@Test
	void declarationsAreCheckedWhereTheyAreWritten() {
		assertThatThrownBy(() -> ElementwiseKernel.named("k").in("float[] x, float[m] t").out("float[] y").body("y = x")
			.build()).hasMessageContaining("Kernel 'k', in, line 1, column 21: the length of 't' must be the name of an int "
					+ "parameter, and 'm' is not declared");
		assertThatThrownBy(() -> ElementwiseKernel.named("k").in("float[] x").out("float y").body("y = x").build())
			.hasMessageContaining("out, line 1, column 1: an output is an array: write 'float[] y'");
		assertThatThrownBy(() -> ElementwiseKernel.named("k").in("float[] class").out("float[] y").body("y = 1.0f").build())
			.hasMessageContaining("'class' cannot name a parameter: it is a word of C, CUDA or Java");
		assertThatThrownBy(() -> ElementwiseKernel.named("k").in("float[] x").out("float[] gc_y").body("gc_y = x").build())
			.hasMessageContaining("names starting with 'gc_' are kept for the generated code");
		body("float[] x", "float[] y", "float x = 1.0f; y = x").hasMessageContaining("'x' is already defined");
		// A local named like the first part of a package the generated Java names in full would hide it.
		body("float[] x", "float[] y", "float dev = x; y = dev").hasMessageContaining("'dev' cannot name a local variable");
	}

	@Test
	void numbersOutOfRangeAreRefused() {
		body("float[] x", "int[] y", "y = 2147483648").hasMessageContaining("too large for an int (write 2147483648L for a long)");
		// The most negative int is written with a minus sign, as in C and Java.
		ElementwiseKernel.named("k").in("float[] x").out("int[] y").body("y = -2147483648").build();
		body("float[] x", "float[] y", "y = 1e39f").hasMessageContaining("too large for a float");
	}

	@Test
	void aMultiLineBodyQuotesTheLineOfTheMistake() {
		body("float[] x", "float[] y", "float t = x;\n\tif (t > 0) {\n\t\ty = tahn(t);\n\t}")
			.hasMessageEndingWith("line 3, column 7: unknown function 'tahn'; the functions are: " + String.join(", ",
					dev.gpucompute.internal.expression.Functions.names()) + "\n  \t\ty = tahn(t);\n  \t\t    ^");
	}

}
