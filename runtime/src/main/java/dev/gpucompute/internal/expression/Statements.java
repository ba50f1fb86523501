package dev.gpucompute.internal.expression;

import java.util.List;

import dev.gpucompute.internal.expression.Ast.Expr;
import dev.gpucompute.internal.expression.Ast.Stmt;

/**
 * Writes checked statements in one of the two target languages: the blocks and branches are the
 * same in CUDA C and Java, so they are written once here; a {@link Dialect} says how each language
 * indents, names a type, writes an expression and assigns an element.
 */
final class Statements {

	/** What differs between the languages the statements are written in. */
	interface Dialect {

		/** One level of indentation. */
		String step();

		/** The type of a local variable. */
		String type(Type type);

		String expr(Expr expr);

		/** The statement (without indentation and line end) that stores {@code value} at element {@code i} of {@code target}. */
		String assignElement(String target, String value);

	}

	private Statements() {
	}

	static void write(StringBuilder out, List<Stmt> statements, String indent, Dialect dialect) {
		for (Stmt statement : statements) {
			write(out, statement, indent, dialect);
		}
	}

	private static void write(StringBuilder out, Stmt statement, String indent, Dialect dialect) {
		String inner = indent + dialect.step();
		if (statement instanceof Ast.Block block) {
			out.append(indent).append("{\n");
			write(out, block.statements, inner, dialect);
			out.append(indent).append("}\n");
		}
		else if (statement instanceof Ast.If branch) {
			out.append(indent).append("if (").append(dialect.expr(branch.condition)).append(") {\n");
			write(out, branch.then, inner, dialect);
			out.append(indent).append("}\n");
			if (branch.otherwise != null) {
				out.append(indent).append("else {\n");
				write(out, branch.otherwise, inner, dialect);
				out.append(indent).append("}\n");
			}
		}
		else if (statement instanceof Ast.Declare declare) {
			out.append(indent).append(dialect.type(declare.type)).append(' ').append(declare.name).append(" = ")
				.append(dialect.expr(declare.value)).append(";\n");
		}
		else if (statement instanceof Ast.Assign assign) {
			String value = dialect.expr(assign.value);
			out.append(indent)
				.append(assign.element ? dialect.assignElement(assign.target, value) : assign.target + " = " + value)
				.append(";\n");
		}
	}

}
