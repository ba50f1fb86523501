package dev.gpucompute.internal.expression;

import java.util.Locale;

import dev.gpucompute.ParamType;
import org.jspecify.annotations.Nullable;

/** The value types of the expression language, with their names in the language, CUDA C and Java. */
public enum Type {

	BOOL("bool", "bool", "boolean", null, null, null),

	INT("int", "int", "int", ParamType.INT, "IntBuffer", "ints"),

	LONG("long", "long long", "long", ParamType.LONG, "LongBuffer", "longs"),

	FLOAT("float", "float", "float", ParamType.FLOAT, "FloatBuffer", "floats"),

	DOUBLE("double", "double", "double", ParamType.DOUBLE, "DoubleBuffer", "doubles");

	private final String name;

	private final String c;

	private final String java;

	private final @Nullable ParamType param;

	private final @Nullable String buffer;

	private final @Nullable String view;

	Type(String name, String c, String java, @Nullable ParamType param, @Nullable String buffer,
			@Nullable String view) {
		this.name = name;
		this.c = c;
		this.java = java;
		this.param = param;
		this.buffer = buffer;
		this.view = view;
	}

	/** The type a word of the language names, or null. */
	public static @Nullable Type named(String word) {
		for (Type type : values()) {
			if (type.name.equals(word)) {
				return type;
			}
		}
		return null;
	}

	/** The name in the expression language. */
	public String word() {
		return this.name;
	}

	public String c() {
		return this.c;
	}

	public String java() {
		return this.java;
	}

	/** The launch parameter type of a scalar of this type. */
	public @Nullable ParamType param() {
		return this.param;
	}

	/** The {@code java.nio} buffer class of an array of this type. */
	@Nullable String buffer() {
		return "java.nio." + this.buffer;
	}

	/** The {@code CpuKernel.Args} method that views a buffer as an array of this type. */
	@Nullable String view() {
		return this.view;
	}

	/** The {@code CpuKernel.Args} method that reads a scalar of this type. */
	String scalarGetter() {
		return switch (this) {
			case INT -> "i32";
			case LONG -> "i64";
			case FLOAT -> "f32";
			case DOUBLE -> "f64";
			case BOOL -> throw new IllegalStateException("no bool parameters");
		};
	}

	boolean isFloating() {
		return this == FLOAT || this == DOUBLE;
	}

	boolean isInteger() {
		return this == INT || this == LONG;
	}

	boolean isNumeric() {
		return this != BOOL;
	}

	/** The element type of an array of this type. */
	public dev.gpucompute.ElementType element() {
		return switch (this) {
			case INT -> dev.gpucompute.ElementType.INT;
			case LONG -> dev.gpucompute.ElementType.LONG;
			case FLOAT -> dev.gpucompute.ElementType.FLOAT;
			case DOUBLE -> dev.gpucompute.ElementType.DOUBLE;
			case BOOL -> throw new IllegalStateException("no bool arrays");
		};
	}

	/** Bytes of one element. */
	public int bytes() {
		return switch (this) {
			case BOOL -> 1;
			case INT, FLOAT -> 4;
			case LONG, DOUBLE -> 8;
		};
	}

	/** Whether a value of this type converts to {@code target} without a cast (Java's widening conversions). */
	boolean widensTo(Type target) {
		if (this == target) {
			return true;
		}
		return switch (this) {
			case INT -> target == LONG || target == FLOAT || target == DOUBLE;
			case LONG -> target == FLOAT || target == DOUBLE;
			case FLOAT -> target == DOUBLE;
			default -> false;
		};
	}

	/** The type both operands of a numeric binary operator are converted to (binary numeric promotion). */
	static Type promote(Type a, Type b) {
		if (a == DOUBLE || b == DOUBLE) {
			return DOUBLE;
		}
		if (a == FLOAT || b == FLOAT) {
			return FLOAT;
		}
		if (a == LONG || b == LONG) {
			return LONG;
		}
		return INT;
	}

	@Override
	public String toString() {
		return this.name.toLowerCase(Locale.ROOT);
	}

}
