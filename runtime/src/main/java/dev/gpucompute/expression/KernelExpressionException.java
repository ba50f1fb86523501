package dev.gpucompute.expression;

import dev.gpucompute.GpuException;

/**
 * A kernel's expression or declaration has a mistake, found when the kernel is defined (parsed and
 * type-checked before anything runs). The message names the kernel, the part of its definition, the
 * line and the column, and quotes the line with a caret under the place:
 *
 * <pre>
 * Kernel 'saxpy', body, line 1, column 9: unknown function 'sqr'; the functions are: abs, acos, ...
 *   y = a * sqr(x) + y
 *           ^
 * </pre>
 *
 * With the Spring starter, a kernel bean whose definition throws it fails start-up with this
 * explanation.
 */
public class KernelExpressionException extends GpuException {

	private static final long serialVersionUID = 1L;

	private final String kernelName;

	private final String part;

	private final int line;

	private final int column;

	private final String problem;

	private final String excerpt;

	/**
	 * @param kernelName the kernel's name
	 * @param part the part of the definition: {@code in}, {@code out}, {@code body}, {@code map},
	 * {@code reduce}, {@code identity} or {@code postMap}
	 * @param text that part's text
	 * @param offset where in it the mistake is (a character offset)
	 * @param problem what is wrong
	 */
	public KernelExpressionException(String kernelName, String part, String text, int offset, String problem) {
		this(kernelName, part, position(text, offset), problem, excerpt(text, offset));
	}

	private KernelExpressionException(String kernelName, String part, int[] position, String problem, String excerpt) {
		super("Kernel '" + kernelName + "', " + part + ", line " + position[0] + ", column " + position[1] + ": " + problem
				+ "\n" + excerpt);
		this.kernelName = kernelName;
		this.part = part;
		this.line = position[0];
		this.column = position[1];
		this.problem = problem;
		this.excerpt = excerpt;
	}

	/** The kernel's name. */
	public String kernelName() {
		return this.kernelName;
	}

	/** The part of the definition the mistake is in ({@code body}, {@code in}, {@code map}, ...). */
	public String part() {
		return this.part;
	}

	/** The line of the mistake in its part's text, from 1. */
	public int line() {
		return this.line;
	}

	/** The column of the mistake on its line, from 1. */
	public int column() {
		return this.column;
	}

	/** What is wrong, without the position. */
	public String problem() {
		return this.problem;
	}

	/** The line quoted, indented by two spaces, with a caret under the column on the next line. */
	public String excerpt() {
		return this.excerpt;
	}

	private static int[] position(String text, int offset) {
		int at = Math.max(0, Math.min(offset, text.length()));
		int line = 1;
		int start = 0;
		for (int k = 0; k < at; k++) {
			if (text.charAt(k) == '\n') {
				line++;
				start = k + 1;
			}
		}
		return new int[] { line, at - start + 1 };
	}

	private static String excerpt(String text, int offset) {
		int at = Math.max(0, Math.min(offset, text.length()));
		int start = text.lastIndexOf('\n', at - 1) + 1;
		int end = text.indexOf('\n', at);
		String line = text.substring(start, (end < 0) ? text.length() : end);
		StringBuilder caret = new StringBuilder("  ");
		for (int k = start; k < at; k++) {
			caret.append(text.charAt(k) == '\t' ? '\t' : ' ');
		}
		return "  " + line + "\n" + caret + "^";
	}

}
