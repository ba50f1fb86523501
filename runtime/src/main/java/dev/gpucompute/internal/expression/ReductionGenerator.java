package dev.gpucompute.internal.expression;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;

import dev.gpucompute.ParamType;

/**
 * Generates a reduction kernel: {@code map} of every element index {@code i}, combined with
 * {@code reduce(a, b)} in an order the kernel fixes, then {@code postMap(a)} written to the output.
 *
 * <p><b>The order.</b> A range of m values {@code v(0..m)} (m at least 1) is reduced by
 * {@value #LANES} lanes: lane {@code l} starts with {@code v(l)} and combines {@code v(l + 256)},
 * {@code v(l + 512)}, ... from left to right, {@code a = reduce(a, v)}; then the lanes (the first
 * {@code min(m, 256)}) are combined by a halving tree, {@code lane[j] = reduce(lane[j], lane[j + h])}
 * for {@code h = 128, 64, ..., 1} and every {@code j < h} with {@code j + h} a lane that exists; the
 * result is lane 0. A segmented reduction reduces each segment so ({@code i} from the segment's start).
 * A whole-input reduction reduces each chunk of {@value #CHUNK} elements so, then the chunks' results
 * (as values, in chunk order) so; an empty input gives {@code postMap(identity)}. The order depends on
 * n (and the segment length) only, never on the launch configuration or the number of CPU workers, so
 * both backends give the same bits for {@code a + b} on floats.
 *
 * <p><b>Parameters.</b> Whole input: {@code (int n, in..., out[] result, acc[] gc_partials, int gc_phase)},
 * launched twice: phase 1 writes one partial result per chunk (any grid), phase 2 reduces them in block 0
 * and writes {@code result[0]}; phase 0 does it all in block 0, which gives the same bits when n is at
 * most one chunk. Segmented: {@code (int n, int segmentLength, in..., out[] result)}, one launch of any
 * grid, {@code result[s]} for each of the {@code ceil(n / segmentLength)} segments (the last may be shorter).
 */
public final class ReductionGenerator {

	/** The lanes of the fixed order: the threads of the CUDA kernel's blocks that reduce. */
	public static final int LANES = 256;

	/** Elements per chunk of a whole-input reduction's first phase. */
	public static final int CHUNK = 4096;

	private ReductionGenerator() {
	}

	/**
	 * @param postMap the post-map expression, {@code "a"} for none
	 * @throws ExpressionError on a mistake, with the part it is in
	 */
	public static Generated generate(String name, String in, String out, String map, String reduce, String identity,
			String postMap, boolean segmented) {
		List<Param> inputs = ElementwiseGenerator.part("in", () -> Param.parse(in, false));
		List<Param> outputs = ElementwiseGenerator.part("out", () -> Param.parse(out, true));
		if (outputs.size() != 1) {
			throw new ExpressionError(0, "a reduction writes one array: declare it with out(\"float[] result\")"
					+ (outputs.isEmpty() ? "" : ", not " + outputs.size())).in("out");
		}
		Param result = outputs.get(0);
		List<Param> all = new ArrayList<>(inputs);
		all.add(result);
		Set<String> builtins = segmented ? Set.of("n", "i", "a", "b", "segmentLength") : Set.of("n", "i", "a", "b");
		try {
			Param.checkAll(all, builtins);
		}
		catch (ExpressionError ex) {
			throw ex.in((ex.offset() == result.offset() && out.length() > 0) ? "out" : "in");
		}
		if (result.length() != null) {
			throw new ExpressionError(result.offset(), "the result has the length the reduction gives it: write '"
					+ result.type().word() + "[] " + result.name() + "'").in("out");
		}
		List<Param> scalars = inputs.stream().filter((p) -> !p.array()).toList();

		Checker mapChecker = new Checker(false);
		mapChecker.scalar("n", Type.INT, null);
		if (segmented) {
			mapChecker.scalar("segmentLength", Type.INT, null);
		}
		mapChecker.index();
		for (Param param : inputs) {
			if (param.array()) {
				mapChecker.array(param);
			}
			else {
				mapChecker.scalar(param.name(), param.type(), param);
			}
		}
		Ast.Expr mapExpr = ElementwiseGenerator.part("map", () -> mapChecker.expr(Parser.expression(map)));
		Type acc = mapExpr.type();
		if (!acc.isNumeric()) {
			throw new ExpressionError(mapExpr.offset, "the map gives the values to reduce, a number; this one is a bool "
					+ "(for a count, write 'c ? 1 : 0')").in("map");
		}

		Checker reduceChecker = new Checker(false);
		reduceChecker.local("a", acc);
		reduceChecker.local("b", acc);
		Ast.Expr reduceExpr = ElementwiseGenerator.part("reduce", () -> reduceChecker
			.assignable(reduceChecker.expr(Parser.expression(reduce)), acc, "the reduce expression (of a and b, both "
					+ Checker.article(acc) + ", the map's type)"));

		Checker identityChecker = new Checker(false);
		Ast.Expr identityExpr = ElementwiseGenerator.part("identity", () -> identityChecker
			.assignable(identityChecker.expr(Parser.expression(identity)), acc, "the identity (of the map's type)"));

		Checker postChecker = new Checker(false);
		postChecker.local("a", acc);
		postChecker.scalar("n", Type.INT, null);
		if (segmented) {
			postChecker.scalar("segmentLength", Type.INT, null);
		}
		for (Param param : scalars) {
			postChecker.scalar(param.name(), param.type(), param);
		}
		Ast.Expr postExpr = ElementwiseGenerator.part("postMap", () -> postChecker
			.assignable(postChecker.expr(Parser.expression(postMap)), result.type(), "the post-map (of a, "
					+ Checker.article(acc) + ", written to '" + result.declaration() + "')"));

		List<String> names = new ArrayList<>(List.of("n"));
		List<ParamType> types = new ArrayList<>(List.of(ParamType.INT));
		if (segmented) {
			names.add("segmentLength");
			types.add(ParamType.INT);
		}
		for (Param param : all) {
			names.add(param.name());
			types.add(param.array() ? ParamType.BUFFER : param.type().param());
		}
		if (!segmented) {
			names.add("gc_partials");
			types.add(ParamType.BUFFER);
			names.add("gc_phase");
			types.add(ParamType.INT);
		}
		Shape shape = new Shape(name, segmented, inputs, scalars, result, acc, mapExpr, reduceExpr, identityExpr, postExpr);
		int ulps = Math.max(Math.max(mapChecker.inexactUlps(), reduceChecker.inexactUlps()),
				Math.max(identityChecker.inexactUlps(), postChecker.inexactUlps()));
		Set<String> inexact = new TreeSet<>(mapChecker.inexactFunctions());
		inexact.addAll(reduceChecker.inexactFunctions());
		inexact.addAll(identityChecker.inexactFunctions());
		inexact.addAll(postChecker.inexactFunctions());
		String javaClass = "Gc_" + name;
		return new Generated(name, List.copyOf(names), List.copyOf(types), ReductionCuda.source(shape), javaClass,
				ReductionJava.source(javaClass, shape), ulps, Set.copyOf(inexact), segmented ? null : acc.element());
	}

	/** Everything the two writers need. */
	record Shape(String name, boolean segmented, List<Param> inputs, List<Param> scalars, Param result, Type acc,
			Ast.Expr map, Ast.Expr reduce, Ast.Expr identity, Ast.Expr postMap) {

		/** The names the map takes after {@code i}: n, segmentLength, the inputs. */
		List<String> mapArgs() {
			List<String> args = new ArrayList<>(List.of("n"));
			if (this.segmented) {
				args.add("segmentLength");
			}
			this.inputs.forEach((p) -> args.add(p.name()));
			return args;
		}

		/** The names the post-map takes after {@code a}: n, segmentLength, the scalar inputs. */
		List<String> postArgs() {
			List<String> args = new ArrayList<>(List.of("n"));
			if (this.segmented) {
				args.add("segmentLength");
			}
			this.scalars.forEach((p) -> args.add(p.name()));
			return args;
		}

	}

}
