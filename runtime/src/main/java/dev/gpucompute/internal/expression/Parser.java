package dev.gpucompute.internal.expression;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

import dev.gpucompute.internal.expression.Ast.Expr;
import dev.gpucompute.internal.expression.Ast.Stmt;
import dev.gpucompute.internal.expression.Lexer.Kind;
import dev.gpucompute.internal.expression.Lexer.Token;

/**
 * Reads a body (statements) or one expression into a tree. The grammar is the common part of C and
 * Java, with their precedence: {@code ?:}, {@code ||}, {@code &&}, {@code |}, {@code ^}, {@code &},
 * {@code == !=}, {@code < <= > >=}, {@code << >> >>>}, {@code + -}, {@code * / %}, unary
 * {@code - + ! ~} and casts, then names, calls, indexing, literals and parentheses. Statements:
 * {@code type name = e;}, {@code name = e;} (and {@code += -= *= /= %=}), {@code name[i] = e;},
 * {@code if (c) s else s}, {@code { ... }}; the last statement's semicolon may be left out (a '}' ends one too).
 */
final class Parser {

	private final List<Token> tokens;

	private int next;

	private Parser(String text) {
		this.tokens = Lexer.tokens(text);
	}

	/** The statements of a body. */
	static List<Stmt> body(String text) {
		Parser parser = new Parser(text);
		List<Stmt> statements = new ArrayList<>();
		while (parser.peek().kind() != Kind.END) {
			statements.add(parser.statement());
		}
		if (statements.isEmpty()) {
			throw new ExpressionError(0, "the body is empty: it needs at least one statement, such as 'y = x'");
		}
		return statements;
	}

	/** One expression, and nothing after it. */
	static Expr expression(String text) {
		Parser parser = new Parser(text);
		if (parser.peek().kind() == Kind.END) {
			throw new ExpressionError(0, "the expression is empty");
		}
		Expr expr = parser.expression();
		Token end = parser.peek();
		if (end.kind() != Kind.END) {
			throw new ExpressionError(end.offset(), "expected the end of the expression, found " + end.describe()
					+ (end.is(";") || end.is("=") ? " (this is an expression, not a statement)" : ""));
		}
		return expr;
	}

	// ---------------------------------------------------------------- statements

	private Stmt statement() {
		Token first = peek();
		if (first.is("{")) {
			take();
			List<Stmt> statements = new ArrayList<>();
			while (!peek().is("}")) {
				if (peek().kind() == Kind.END) {
					throw new ExpressionError(first.offset(), "this '{' is never closed");
				}
				statements.add(statement());
			}
			take();
			return new Ast.Block(first.offset(), statements);
		}
		if (first.kind() == Kind.IDENT && first.text().equals("if")) {
			take();
			expect("(", "after 'if'");
			Expr condition = expression();
			expect(")", "after the condition of 'if'");
			Stmt then = statement();
			Stmt otherwise = null;
			if (peek().kind() == Kind.IDENT && peek().text().equals("else")) {
				take();
				otherwise = statement();
			}
			return new Ast.If(first.offset(), condition, then, otherwise);
		}
		if (first.is(";")) {
			take();
			return new Ast.Block(first.offset(), List.of());
		}
		Stmt statement;
		if (first.kind() == Kind.IDENT && Type.named(first.text()) != null && peek(1).kind() == Kind.IDENT) {
			take();
			Token name = take();
			expect("=", "after '" + first.text() + " " + name.text() + "' (a local variable needs a value)");
			Type declared = Objects.requireNonNull(Type.named(first.text())); // a type's name, checked above
			statement = new Ast.Declare(first.offset(), declared, name.text(), name.offset(), expression());
		}
		else if (first.kind() == Kind.IDENT && (peek(1).is("[") || isAssignment(peek(1)))) {
			statement = assignment();
		}
		else {
			Expr expr = expression();
			throw new ExpressionError(expr.offset, "a statement must assign a value (such as 'y = " + first.text()
					+ " ...' or 'float t = ...'), not only compute one");
		}
		Token end = peek();
		if (end.is(";")) {
			take();
		}
		else if (end.kind() != Kind.END && !end.is("}")) {
			throw new ExpressionError(end.offset(), "expected ';' after the statement, found " + end.describe());
		}
		return statement;
	}

	private static boolean isAssignment(Token token) {
		return token.is("=") || token.is("+=") || token.is("-=") || token.is("*=") || token.is("/=") || token.is("%=");
	}

	private Stmt assignment() {
		Token target = take();
		Expr index = null;
		if (peek().is("[")) {
			take();
			index = expression();
			expect("]", "after the index");
		}
		Token op = take();
		if (!isAssignment(op)) {
			throw new ExpressionError(op.offset(), "expected '=' after '" + target.text() + (index != null ? "[...]" : "")
					+ "', found " + op.describe() + " (a statement must assign a value)");
		}
		Expr value = expression();
		if (!op.is("=")) {
			// y op= e is y = y op (e): the target is read as it is written.
			Expr read = (index != null) ? new Ast.Index(target.offset(), target.text(), index)
					: new Ast.Name(target.offset(), target.text());
			value = new Ast.Binary(op.offset(), op.text().substring(0, 1), read, value);
		}
		return new Ast.Assign(target.offset(), target.text(), index, value);
	}

	// ---------------------------------------------------------------- expressions

	private Expr expression() {
		Expr condition = binary(0);
		if (peek().is("?")) {
			Token question = take();
			Expr then = expression();
			expect(":", "in 'condition ? a : b'");
			Expr otherwise = expression();
			return new Ast.Conditional(question.offset(), condition, then, otherwise);
		}
		return condition;
	}

	private static final String[][] LEVELS = { { "||" }, { "&&" }, { "|" }, { "^" }, { "&" }, { "==", "!=" },
			{ "<", "<=", ">", ">=" }, { "<<", ">>", ">>>" }, { "+", "-" }, { "*", "/", "%" } };

	private Expr binary(int level) {
		if (level == LEVELS.length) {
			return unary();
		}
		Expr left = binary(level + 1);
		while (true) {
			Token op = peek();
			String matched = null;
			if (op.kind() == Kind.OP) {
				for (String candidate : LEVELS[level]) {
					if (op.text().equals(candidate)) {
						matched = candidate;
					}
				}
			}
			if (matched == null) {
				return left;
			}
			take();
			left = new Ast.Binary(op.offset(), matched, left, binary(level + 1));
		}
	}

	private Expr unary() {
		Token token = peek();
		if (token.is("-") || token.is("+") || token.is("!") || token.is("~")) {
			take();
			if (token.is("-") && peek().kind() == Kind.NUMBER && !(peek(1).is("["))) {
				Token number = take();
				return negated(token, number);
			}
			return new Ast.Unary(token.offset(), token.text(), unary());
		}
		if (token.is("(") && peek(1).kind() == Kind.IDENT && Type.named(peek(1).text()) != null && peek(2).is(")")) {
			take();
			Type target = Objects.requireNonNull(Type.named(take().text())); // a type's name, checked above
			take();
			return new Ast.Cast(token.offset(), target, unary(), false);
		}
		return primary();
	}

	/** A negative literal, the only place where 2147483648 and 9223372036854775808L are valid. */
	private static Expr negated(Token minus, Token number) {
		Object value = Objects.requireNonNull(number.value(), "a number without its value");
		Type type = Objects.requireNonNull(number.type(), "a number without its type");
		if (value instanceof Lexer.Overflow overflow) {
			return new Ast.Literal(minus.offset(), type, overflow.minimum());
		}
		if (value instanceof Long integer) {
			return new Ast.Literal(minus.offset(), type, -integer);
		}
		if (value instanceof Float f) {
			return new Ast.Literal(minus.offset(), Type.FLOAT, -f);
		}
		return new Ast.Literal(minus.offset(), Type.DOUBLE, -(Double) value);
	}

	private Expr primary() {
		Token token = take();
		switch (token.kind()) {
			case NUMBER -> {
				if (token.value() instanceof Lexer.Overflow) {
					throw new ExpressionError(token.offset(), "the number " + token.text() + " is too large for "
							+ (token.type() == Type.LONG ? "a long" : "an int (write " + token.text() + "L for a long)"));
				}
				Type type = Objects.requireNonNull(token.type(), "a number without its type");
				return new Ast.Literal(token.offset(), type, Objects.requireNonNull(token.value(), "a number without its value"));
			}
			case IDENT -> {
				if (token.text().equals("true") || token.text().equals("false")) {
					return new Ast.Literal(token.offset(), Type.BOOL, Boolean.valueOf(token.text()));
				}
				if (peek().is("(")) {
					take();
					List<Expr> args = new ArrayList<>();
					if (!peek().is(")")) {
						do {
							args.add(expression());
						}
						while (peek().is(",") && take() != null);
					}
					expect(")", "after the arguments of '" + token.text() + "'");
					return new Ast.Call(token.offset(), token.text(), List.copyOf(args));
				}
				if (peek().is("[")) {
					take();
					Expr index = expression();
					expect("]", "after the index");
					return new Ast.Index(token.offset(), token.text(), index);
				}
				return new Ast.Name(token.offset(), token.text());
			}
			case OP -> {
				if (token.is("(")) {
					Expr inner = expression();
					expect(")", "to close '('");
					return inner;
				}
				throw new ExpressionError(token.offset(), "expected a value (a number, a name, a call or '('), found "
						+ token.describe());
			}
			default -> throw new ExpressionError(token.offset(), "the expression ends too early: expected a value");
		}
	}

	// ---------------------------------------------------------------- tokens

	private Token peek() {
		return this.tokens.get(this.next);
	}

	private Token peek(int ahead) {
		return this.tokens.get(Math.min(this.next + ahead, this.tokens.size() - 1));
	}

	private Token take() {
		Token token = this.tokens.get(this.next);
		if (token.kind() != Kind.END) {
			this.next++;
		}
		return token;
	}

	private void expect(String op, String where) {
		Token token = peek();
		if (!token.is(op)) {
			throw new ExpressionError(token.offset(), "expected '" + op + "' " + where + ", found " + token.describe());
		}
		take();
	}

}
