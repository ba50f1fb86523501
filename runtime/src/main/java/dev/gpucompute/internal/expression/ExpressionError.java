package dev.gpucompute.internal.expression;

import org.jspecify.annotations.Nullable;

/**
 * A mistake in an expression or a declaration, found while it is read or checked: what is wrong and
 * where (a character offset into the text that was read). The public builders turn it into a
 * message with the line, the column and the text quoted with a caret.
 */
public final class ExpressionError extends RuntimeException {

	private static final long serialVersionUID = 1L;

	private final @Nullable String part;

	private final int offset;

	private final String problem;

	public ExpressionError(int offset, String problem) {
		this(null, offset, problem);
	}

	private ExpressionError(@Nullable String part, int offset, String problem) {
		super(((part != null) ? part + ": " : "") + problem + " (at offset " + offset + ")");
		this.part = part;
		this.offset = offset;
		this.problem = problem;
	}

	/** The same mistake, said to be in {@code part} of the kernel's definition ("body", "in", "map"). */
	ExpressionError in(String part) {
		return (this.part != null) ? this : new ExpressionError(part, this.offset, this.problem);
	}

	/** Which text of the definition the offset is in: "in", "out", "body", "map", "reduce", "identity", "post-map". */
	public @Nullable String part() {
		return this.part;
	}

	/** Where in the text, as a character offset (0-based). */
	public int offset() {
		return this.offset;
	}

	/** What is wrong, as a sentence without the position. */
	public String problem() {
		return this.problem;
	}

}
