package dev.gpucompute.internal.expression;

import java.util.List;

import org.jspecify.annotations.Nullable;

/**
 * The syntax tree of an expression or a body. The checker fills in each expression's type and what
 * each name refers to, and wraps operands in conversions where the language converts implicitly, so
 * that both writers emit every conversion explicitly.
 */
final class Ast {

	private Ast() {
	}

	/** An expression; {@link #type} is set by the checker (a literal's and a cast's when made). */
	abstract static class Expr {

		final int offset;

		/** Null until the checker sets it: read it through {@link #type()} once checked. */
		@Nullable Type type;

		Expr(int offset) {
			this.offset = offset;
		}

		/**
		 * The type the checker gave this expression.
		 * @throws IllegalStateException when the checker has not set it (a writer given an unchecked tree)
		 */
		final Type type() {
			Type checked = this.type;
			if (checked == null) {
				throw new IllegalStateException("Expression at offset " + this.offset + " is not checked");
			}
			return checked;
		}

	}

	/** A literal: {@code value} is a {@code Long} (int, long), {@code Float}, {@code Double} or {@code Boolean}. */
	static final class Literal extends Expr {

		final Object value;

		Literal(int offset, Type type, Object value) {
			super(offset);
			this.type = type;
			this.value = value;
		}

	}

	/** What a name refers to, once checked. */
	enum NameKind {

		/** A scalar parameter (or the element count), read only. */
		SCALAR,

		/** The element index {@code i}. */
		INDEX,

		/** An array's element at the element index: {@code x} standing for {@code x[i]}. */
		ELEMENT,

		/** A local variable (or a reduction's operand). */
		LOCAL

	}

	static final class Name extends Expr {

		final String name;

		/** Null until the checker sets it: read it through {@link #kind()} once checked. */
		@Nullable NameKind kind;

		Name(int offset, String name) {
			super(offset);
			this.name = name;
		}

		/**
		 * What the name refers to, as the checker found.
		 * @throws IllegalStateException when the checker has not set it
		 */
		NameKind kind() {
			NameKind checked = this.kind;
			if (checked == null) {
				throw new IllegalStateException("Name '" + this.name + "' is not checked");
			}
			return checked;
		}

	}

	/** {@code array[index]}, an input array read at any index (zero outside its length). */
	static final class Index extends Expr {

		final String array;

		final Expr index;

		/** The array's length: a scalar's name; null for the element count {@code n}. */
		@Nullable String length;

		Index(int offset, String array, Expr index) {
			super(offset);
			this.array = array;
			this.index = index;
		}

	}

	static final class Unary extends Expr {

		final String op;

		Expr operand;

		Unary(int offset, String op, Expr operand) {
			super(offset);
			this.op = op;
			this.operand = operand;
		}

	}

	static final class Binary extends Expr {

		final String op;

		Expr left;

		Expr right;

		Binary(int offset, String op, Expr left, Expr right) {
			super(offset);
			this.op = op;
			this.left = left;
			this.right = right;
		}

	}

	static final class Conditional extends Expr {

		Expr condition;

		Expr then;

		Expr otherwise;

		Conditional(int offset, Expr condition, Expr then, Expr otherwise) {
			super(offset);
			this.condition = condition;
			this.then = then;
			this.otherwise = otherwise;
		}

	}

	/** A conversion: written as a cast, or inserted by the checker ({@code implicit}). */
	static final class Cast extends Expr {

		final Type target;

		Expr operand;

		final boolean implicit;

		Cast(int offset, Type target, Expr operand, boolean implicit) {
			super(offset);
			this.target = target;
			this.operand = operand;
			this.implicit = implicit;
			this.type = target;
		}

	}

	static final class Call extends Expr {

		final String function;

		final List<Expr> args;

		/** The function as the checker resolved it; null until then: read it through {@link #resolved()}. */
		Functions.@Nullable Function resolved;

		Call(int offset, String function, List<Expr> args) {
			super(offset);
			this.function = function;
			this.args = args;
		}

		/**
		 * The function as the checker resolved it.
		 * @throws IllegalStateException when the checker has not set it
		 */
		Functions.Function resolved() {
			Functions.Function checked = this.resolved;
			if (checked == null) {
				throw new IllegalStateException("Call of '" + this.function + "' is not checked");
			}
			return checked;
		}

	}

	/** A statement of a body. */
	abstract static class Stmt {

		final int offset;

		Stmt(int offset) {
			this.offset = offset;
		}

	}

	/** {@code type name = value;} */
	static final class Declare extends Stmt {

		final Type type;

		final String name;

		final int nameOffset;

		Expr value;

		Declare(int offset, Type type, String name, int nameOffset, Expr value) {
			super(offset);
			this.type = type;
			this.name = name;
			this.nameOffset = nameOffset;
			this.value = value;
		}

	}

	/**
	 * {@code target = value;} (compound assignments are expanded by the parser): to a local, or to an
	 * output array's element at the element index.
	 */
	static final class Assign extends Stmt {

		final String target;

		/** The index written, for {@code y[i] = ...}; null for {@code y = ...}. */
		final @Nullable Expr index;

		Expr value;

		/** Whether the target is an output array's element (else a local). */
		boolean element;

		Assign(int offset, String target, @Nullable Expr index, Expr value) {
			super(offset);
			this.target = target;
			this.index = index;
			this.value = value;
		}

	}

	static final class If extends Stmt {

		Expr condition;

		final Stmt then;

		/** The else branch; null without one. */
		final @Nullable Stmt otherwise;

		If(int offset, Expr condition, Stmt then, @Nullable Stmt otherwise) {
			super(offset);
			this.condition = condition;
			this.then = then;
			this.otherwise = otherwise;
		}

	}

	static final class Block extends Stmt {

		final List<Stmt> statements;

		Block(int offset, List<Stmt> statements) {
			super(offset);
			this.statements = statements;
		}

	}

}
