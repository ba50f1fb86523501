package dev.gpucompute.internal.expression;

import java.util.ArrayDeque;
import java.util.Deque;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

import dev.gpucompute.internal.expression.Ast.Expr;
import dev.gpucompute.internal.expression.Ast.Stmt;
import org.jspecify.annotations.Nullable;

/**
 * Gives every expression its type and every name its meaning, refusing what either backend would
 * compute differently or not at all. Implicit conversions (Java's widening ones) become explicit
 * {@link Ast.Cast}s, so that the writers never leave a conversion to a compiler.
 */
final class Checker {

	/** What a name of the kernel stands for. */
	enum SymbolKind {

		SCALAR, ARRAY, INDEX

	}

	record Symbol(String name, SymbolKind kind, Type type, @Nullable Param param) {

		/** The parameter of an {@link SymbolKind#ARRAY} symbol: every array is one. */
		Param array() {
			return Objects.requireNonNull(this.param, "an array without its parameter");
		}

	}

	private final Map<String, Symbol> symbols = new LinkedHashMap<>();

	private final Deque<Map<String, Type>> locals = new ArrayDeque<>();

	/** Functions with results that may differ between the backends, as used: for the kernel's tolerance. */
	private final Map<String, Integer> inexact = new java.util.TreeMap<>();

	private final boolean statements;

	/**
	 * @param statements whether assignments to outputs are allowed (a body) rather than one expression
	 */
	Checker(boolean statements) {
		this.statements = statements;
		this.locals.push(new HashMap<>());
	}

	void scalar(String name, Type type, @Nullable Param param) {
		this.symbols.put(name, new Symbol(name, SymbolKind.SCALAR, type, param));
	}

	void array(Param param) {
		this.symbols.put(param.name(), new Symbol(param.name(), SymbolKind.ARRAY, param.type(), param));
	}

	void index() {
		this.symbols.put("i", new Symbol("i", SymbolKind.INDEX, Type.INT, null));
	}

	/** A local variable the kernel defines itself (a reduction's {@code a} and {@code b}). */
	void local(String name, Type type) {
		this.locals.peek().put(name, type);
	}

	/** The most ulps any inexact function this checker met may add, for results of its types; 0 when none was used. */
	int inexactUlps() {
		return this.inexact.values().stream().mapToInt(Integer::intValue).max().orElse(0);
	}

	/** The inexact functions used, by name. */
	java.util.Set<String> inexactFunctions() {
		return this.inexact.keySet();
	}

	// ---------------------------------------------------------------- statements

	void body(List<Stmt> statements) {
		for (Stmt statement : statements) {
			statement(statement);
		}
	}

	private void statement(Stmt statement) {
		if (statement instanceof Ast.Block block) {
			this.locals.push(new HashMap<>());
			body(block.statements);
			this.locals.pop();
		}
		else if (statement instanceof Ast.If branch) {
			branch.condition = condition(branch.condition, "the condition of 'if'");
			scoped(branch.then);
			if (branch.otherwise != null) {
				scoped(branch.otherwise);
			}
		}
		else if (statement instanceof Ast.Declare declare) {
			Names.check(declare.name, declare.nameOffset, "a local variable");
			if (this.symbols.containsKey(declare.name) || localType(declare.name) != null) {
				throw new ExpressionError(declare.nameOffset, "'" + declare.name + "' is already defined; choose another name");
			}
			declare.value = assignable(expr(declare.value), declare.type, "the value of '" + declare.name + "'");
			this.locals.peek().put(declare.name, declare.type);
		}
		else if (statement instanceof Ast.Assign assign) {
			assign(assign);
		}
	}

	/** A branch of an if is a scope of its own even without braces. */
	private void scoped(Stmt statement) {
		this.locals.push(new HashMap<>());
		statement(statement);
		this.locals.pop();
	}

	private void assign(Ast.Assign assign) {
		Type local = localType(assign.target);
		if (local != null && assign.index == null) {
			assign.value = assignable(expr(assign.value), local, "the value of '" + assign.target + "'");
			return;
		}
		Symbol symbol = this.symbols.get(assign.target);
		if (symbol == null) {
			throw new ExpressionError(assign.offset, "'" + assign.target + "' is not defined; declare a local with its "
					+ "type first, such as 'float " + assign.target + " = ...'" + known());
		}
		if (symbol.kind() != SymbolKind.ARRAY) {
			throw new ExpressionError(assign.offset, "'" + assign.target + "' is " + describe(symbol) + " and cannot be "
					+ "assigned; declare a local instead, such as '" + symbol.type().word() + " t = " + assign.target + "'");
		}
		if (!symbol.array().output() || !this.statements) {
			throw new ExpressionError(assign.offset, "'" + assign.target + "' is an input and cannot be assigned: only "
					+ "arrays declared with out(...) are written");
		}
		if (assign.index != null && !isIndex(assign.index)) {
			throw new ExpressionError(start(assign.index), "an output is written only at the element index: write '"
					+ assign.target + " = ...' or '" + assign.target + "[i] = ...' (writing other elements would race "
					+ "with the threads that own them)");
		}
		assign.element = true;
		assign.value = assignable(expr(assign.value), symbol.type(), "the value of '" + assign.target + "'");
	}

	/** Where an expression's text starts: a binary expression's offset is its operator's. */
	static int start(Expr expr) {
		if (expr instanceof Ast.Binary binary) {
			return Math.min(binary.offset, start(binary.left));
		}
		if (expr instanceof Ast.Conditional conditional) {
			return Math.min(conditional.offset, start(conditional.condition));
		}
		if (expr instanceof Ast.Cast cast && cast.implicit) {
			return start(cast.operand);
		}
		return expr.offset;
	}

	private static boolean isIndex(Expr expr) {
		return expr instanceof Ast.Name name && name.name.equals("i");
	}

	// ---------------------------------------------------------------- expressions

	Expr condition(Expr expr, String what) {
		Expr checked = expr(expr);
		if (checked.type() != Type.BOOL) {
			throw new ExpressionError(start(expr), what + " must be a bool (a comparison such as 'x > 0'), got "
					+ checked.type().word());
		}
		return checked;
	}

	/** Converts {@code expr} (checked) to {@code target} where the language does so without a cast. */
	Expr assignable(Expr expr, Type target, String what) {
		if (expr.type() == target) {
			return expr;
		}
		if (expr.type().widensTo(target)) {
			return new Ast.Cast(expr.offset, target, expr, true);
		}
		throw new ExpressionError(start(expr), what + " must be " + article(target) + ", got " + article(expr.type())
				+ ((expr.type().isNumeric() && target.isNumeric())
						? "; convert it with a cast, such as '(" + target.word()
						+ ") ...'" : ""));
	}

	Expr expr(Expr expr) {
		if (expr instanceof Ast.Literal) {
			return expr;
		}
		if (expr instanceof Ast.Name name) {
			return name(name);
		}
		if (expr instanceof Ast.Index index) {
			return index(index);
		}
		if (expr instanceof Ast.Unary unary) {
			return unary(unary);
		}
		if (expr instanceof Ast.Binary binary) {
			return binary(binary);
		}
		if (expr instanceof Ast.Conditional conditional) {
			return conditional(conditional);
		}
		if (expr instanceof Ast.Cast cast) {
			cast.operand = expr(cast.operand);
			if (!cast.operand.type().isNumeric() || !cast.target.isNumeric()) {
				throw new ExpressionError(cast.offset, "cannot convert " + article(cast.operand.type()) + " to "
						+ article(cast.target) + ": casts convert between int, long, float and double"
						+ (cast.operand.type() == Type.BOOL ? " (for a number from a condition write 'c ? 1 : 0')"
								: ""));
			}
			return cast;
		}
		if (expr instanceof Ast.Call call) {
			return call(call);
		}
		throw new IllegalStateException("unknown expression " + expr);
	}

	private Expr name(Ast.Name name) {
		Type local = localType(name.name);
		if (local != null) {
			name.kind = Ast.NameKind.LOCAL;
			name.type = local;
			return name;
		}
		Symbol symbol = this.symbols.get(name.name);
		if (symbol == null) {
			throw new ExpressionError(name.offset, "'" + name.name + "' is not defined" + known());
		}
		switch (symbol.kind()) {
			case SCALAR -> name.kind = Ast.NameKind.SCALAR;
			case INDEX -> name.kind = Ast.NameKind.INDEX;
			case ARRAY -> {
				if (!this.symbols.containsKey("i")) {
					throw new ExpressionError(name.offset, "'" + name.name + "' is an array, which this expression cannot "
							+ "read");
				}
				if (symbol.array().length() != null) {
					throw new ExpressionError(name.offset, "'" + name.name + "' has its own length '"
							+ symbol.array().length()
							+ "', so it is read by index, such as '" + name.name + "[i]'");
				}
				name.kind = Ast.NameKind.ELEMENT;
			}
		}
		name.type = symbol.type();
		return name;
	}

	private Expr index(Ast.Index index) {
		Symbol symbol = this.symbols.get(index.array);
		if (symbol == null || symbol.kind() != SymbolKind.ARRAY) {
			throw new ExpressionError(index.offset, "'" + index.array + "' is " + ((symbol == null) ? "not defined"
					: describe(symbol)) + ", so it cannot be indexed" + ((symbol == null) ? known() : ""));
		}
		if (!this.symbols.containsKey("i")) {
			throw new ExpressionError(index.offset, "'" + index.array + "' is an array, which this expression cannot read");
		}
		if (symbol.array().output()) {
			if (isIndex(index.index) && symbol.array().length() == null) {
				// y[i] reads the element this thread owns, like y.
				Ast.Name element = new Ast.Name(index.offset, index.array);
				element.kind = Ast.NameKind.ELEMENT;
				element.type = symbol.type();
				return element;
			}
			throw new ExpressionError(index.offset, "'" + index.array + "' is written by this kernel, so it is read only at "
					+ "the element index ('" + index.array + "' or '" + index.array + "[i]'): another thread may be writing "
					+ "the element you would read");
		}
		Expr position = expr(index.index);
		if (position.type() != Type.INT) {
			throw new ExpressionError(index.index.offset, "an index must be an int, got " + article(position.type())
					+ (position.type().isNumeric() ? "; convert it, such as '" + index.array + "[(int) ...]'" : ""));
		}
		index.index.type = position.type();
		Ast.Index checked = (position == index.index) ? index : new Ast.Index(index.offset, index.array, position);
		checked.length = (symbol.array().length() != null) ? symbol.array().length() : null;
		checked.type = symbol.type();
		return checked;
	}

	private Expr unary(Ast.Unary unary) {
		unary.operand = expr(unary.operand);
		Type type = unary.operand.type();
		switch (unary.op) {
			case "!" -> {
				if (type != Type.BOOL) {
					throw new ExpressionError(unary.offset, "'!' negates a bool, got " + article(type)
							+ (type.isInteger() ? " (for bits, use '~')" : ""));
				}
			}
			case "~" -> {
				if (!type.isInteger()) {
					throw new ExpressionError(unary.offset, "'~' inverts the bits of an int or long, got " + article(type));
				}
			}
			default -> {
				if (!type.isNumeric()) {
					throw new ExpressionError(unary.offset, "'" + unary.op + "' needs a number, got " + article(type));
				}
				if (unary.op.equals("+")) {
					return unary.operand;
				}
			}
		}
		unary.type = type;
		return unary;
	}

	private Expr binary(Ast.Binary binary) {
		binary.left = expr(binary.left);
		binary.right = expr(binary.right);
		Type l = binary.left.type();
		Type r = binary.right.type();
		String op = binary.op;
		switch (op) {
			case "&&", "||" -> {
				if (l != Type.BOOL || r != Type.BOOL) {
					throw new ExpressionError(binary.offset, "'" + op + "' joins two bools, got " + article(l) + " and "
							+ article(r));
				}
				binary.type = Type.BOOL;
			}
			case "==", "!=" -> {
				if (l == Type.BOOL && r == Type.BOOL) {
					binary.type = Type.BOOL;
				}
				else if (l.isNumeric() && r.isNumeric()) {
					promoteOperands(binary);
					binary.type = Type.BOOL;
				}
				else {
					throw new ExpressionError(binary.offset, "'" + op + "' compares two numbers or two bools, got "
							+ article(l) + " and " + article(r));
				}
			}
			case "<", "<=", ">", ">=" -> {
				numeric(binary, l, r);
				promoteOperands(binary);
				binary.type = Type.BOOL;
			}
			case "<<", ">>", ">>>" -> {
				if (!l.isInteger() || !r.isInteger()) {
					throw new ExpressionError(binary.offset, "'" + op + "' shifts an int or long by an int or long, got "
							+ article(l) + " and " + article(r));
				}
				binary.type = l;
			}
			case "&", "|", "^" -> {
				if (!l.isInteger() || !r.isInteger()) {
					throw new ExpressionError(binary.offset, "'" + op + "' combines the bits of ints or longs, got "
							+ article(l) + " and " + article(r) + ((l == Type.BOOL || r == Type.BOOL)
									? " (for conditions, use '" + op + op + "')" : ""));
				}
				binary.type = promoteOperands(binary);
			}
			default -> {
				numeric(binary, l, r);
				binary.type = promoteOperands(binary);
			}
		}
		return binary;
	}

	private static void numeric(Ast.Binary binary, Type l, Type r) {
		if (!l.isNumeric() || !r.isNumeric()) {
			throw new ExpressionError(binary.offset, "'" + binary.op + "' needs two numbers, got " + article(l) + " and "
					+ article(r));
		}
	}

	private static Type promoteOperands(Ast.Binary binary) {
		Type promoted = Type.promote(binary.left.type(), binary.right.type());
		binary.left = convert(binary.left, promoted);
		binary.right = convert(binary.right, promoted);
		return promoted;
	}

	private static Expr convert(Expr expr, Type target) {
		return (expr.type() == target) ? expr : new Ast.Cast(expr.offset, target, expr, true);
	}

	private Expr conditional(Ast.Conditional conditional) {
		conditional.condition = condition(conditional.condition, "the condition of '?:'");
		conditional.then = expr(conditional.then);
		conditional.otherwise = expr(conditional.otherwise);
		Type a = conditional.then.type();
		Type b = conditional.otherwise.type();
		if (a == Type.BOOL && b == Type.BOOL) {
			conditional.type = Type.BOOL;
		}
		else if (a.isNumeric() && b.isNumeric()) {
			Type promoted = Type.promote(a, b);
			conditional.then = convert(conditional.then, promoted);
			conditional.otherwise = convert(conditional.otherwise, promoted);
			conditional.type = promoted;
		}
		else {
			throw new ExpressionError(conditional.offset, "the two values of '?:' must both be numbers or both bools, got "
					+ article(a) + " and " + article(b));
		}
		return conditional;
	}

	private Expr call(Ast.Call call) {
		Functions.Function function = Functions.find(call.function);
		if (function == null) {
			throw new ExpressionError(call.offset, "unknown function '" + call.function + "'; the functions are: "
					+ String.join(", ", Functions.names()));
		}
		if (call.args.size() != function.arity()) {
			throw new ExpressionError(call.offset, "'" + call.function + "' takes " + function.arity() + " argument"
					+ (function.arity() == 1 ? "" : "s") + ", got " + call.args.size());
		}
		List<Expr> args = new java.util.ArrayList<>();
		for (Expr arg : call.args) {
			args.add(expr(arg));
		}
		boolean floating = function.shape() != Functions.Shape.NUMERIC && function.shape() != Functions.Shape.NUMERIC2;
		Type type = null;
		for (int k = 0; k < args.size(); k++) {
			Type argType = args.get(k).type();
			if (floating ? !argType.isFloating() : !argType.isNumeric()) {
				throw new ExpressionError(args.get(k).offset, "'" + call.function + "' takes "
						+ (floating ? "float or double" : "int, long, float or double") + " arguments, and argument "
						+ (k + 1) + " is " + article(argType) + describeArg(call.args.get(k))
						+ (floating && argType.isInteger() ? "; convert it, such as '" + call.function + "((double) ...)'" : ""));
			}
			type = (type == null) ? argType : Type.promote(type, argType);
		}
		// Every function takes an argument, and the arity was checked above.
		Type common = Objects.requireNonNull(type, "no argument");
		for (int k = 0; k < args.size(); k++) {
			args.set(k, convert(args.get(k), common));
		}
		Ast.Call checked = new Ast.Call(call.offset, call.function, List.copyOf(args));
		checked.resolved = function;
		checked.type = (function.shape() == Functions.Shape.PREDICATE) ? Type.BOOL : common;
		if (!function.exact()) {
			this.inexact.merge(function.name(), function.ulps(common), Math::max);
		}
		return checked;
	}

	// ---------------------------------------------------------------- names

	private @Nullable Type localType(String name) {
		for (Map<String, Type> scope : this.locals) {
			Type type = scope.get(name);
			if (type != null) {
				return type;
			}
		}
		return null;
	}

	private String describeArg(Expr arg) {
		if (arg instanceof Ast.Name name) {
			Symbol symbol = this.symbols.get(name.name);
			if (symbol != null && symbol.param() != null) {
				return " (the parameter '" + symbol.param().declaration() + "')";
			}
			return " ('" + name.name + "')";
		}
		return "";
	}

	private static String describe(Symbol symbol) {
		return switch (symbol.kind()) {
			case SCALAR -> (symbol.param() != null) ? "the parameter '" + symbol.param().declaration() + "'"
					: "the " + symbol.type().word() + " '" + symbol.name() + "' the kernel defines";
			case INDEX -> "the element index";
			case ARRAY -> "the " + (symbol.array().output() ? "output" : "input") + " array '"
					+ symbol.array().declaration()
					+ "'";
		};
	}

	private String known() {
		java.util.Set<String> names = new java.util.TreeSet<>(this.symbols.keySet());
		for (Map<String, Type> scope : this.locals) {
			names.addAll(scope.keySet());
		}
		return names.isEmpty() ? "" : " (the names here are: " + String.join(", ", names) + ")";
	}

	static String article(Type type) {
		return switch (type) {
			case INT -> "an int";
			default -> "a " + type.word();
		};
	}

}
