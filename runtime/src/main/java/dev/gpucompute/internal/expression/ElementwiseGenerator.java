package dev.gpucompute.internal.expression;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;

import dev.gpucompute.ParamType;

/**
 * Generates an elementwise kernel: {@code (int n, in..., out...)}, its body run once for every
 * element index {@code i} in {@code [0, n)}. Any launch configuration covers every element (a
 * grid-stride loop over all blocks and threads of the grid), and since an output is written only at
 * {@code i} and an array that is written is read only there, the elements are independent: the order
 * in which threads or CPU workers run them cannot change a result.
 */
public final class ElementwiseGenerator {

	private ElementwiseGenerator() {
	}

	/**
	 * @throws ExpressionError on a mistake in a declaration or the body, with the part it is in
	 */
	public static Generated generate(String name, String in, String out, String body) {
		List<Param> params = new ArrayList<>();
		params.addAll(part("in", () -> Param.parse(in, false)));
		List<Param> outputs = part("out", () -> Param.parse(out, true));
		if (outputs.isEmpty()) {
			throw new ExpressionError(0, "an elementwise kernel writes at least one array: declare it with out(\"float[] y\")")
				.in("out");
		}
		params.addAll(outputs);
		try {
			Param.checkAll(params, Set.of("n", "i"));
		}
		catch (ExpressionError ex) {
			// The offset is in the text that declared the parameter.
			throw ex.in(params.stream().filter((p) -> p.offset() == ex.offset()).findFirst()
				.map((p) -> p.output() ? "out" : "in").orElse("in"));
		}
		List<Ast.Stmt> statements = part("body", () -> Parser.body(body));
		Checker checker = new Checker(true);
		checker.scalar("n", Type.INT, null);
		checker.index();
		for (Param param : params) {
			if (param.array()) {
				checker.array(param);
			}
			else {
				checker.scalar(param.name(), param.type(), param);
			}
		}
		part("body", () -> {
			checker.body(statements);
			return null;
		});
		List<String> names = new ArrayList<>(List.of("n"));
		List<ParamType> types = new ArrayList<>(List.of(ParamType.INT));
		for (Param param : params) {
			names.add(param.name());
			types.add(param.array() ? ParamType.BUFFER : param.type().param());
		}
		String javaClass = "Gc_" + name;
		return new Generated(name, List.copyOf(names), List.copyOf(types), cuda(name, params, statements), javaClass,
				java(javaClass, params, statements), checker.inexactUlps(), Set.copyOf(checker.inexactFunctions()), null);
	}

	static <T> T part(String part, java.util.function.Supplier<T> step) {
		try {
			return step.get();
		}
		catch (ExpressionError ex) {
			throw ex.in(part);
		}
	}

	static String cudaParams(List<Param> params) {
		StringBuilder text = new StringBuilder();
		for (Param param : params) {
			text.append(", ");
			if (param.array()) {
				text.append(param.output() ? "" : "const ").append(param.type().c()).append("* __restrict__ ");
			}
			else {
				text.append(param.type().c()).append(' ');
			}
			text.append(param.name());
		}
		return text.toString();
	}

	private static String cuda(String name, List<Param> params, List<Ast.Stmt> statements) {
		StringBuilder out = new StringBuilder();
		out.append("\nextern \"C\" __global__ void ").append(name).append("(int n").append(cudaParams(params)).append(") {\n");
		out.append("""
				  // Every element of [0, n) once, whatever the launch configuration: a grid-stride loop.
				  const long long gc_threads = (long long) blockDim.x * blockDim.y * blockDim.z;
				  const long long gc_stride = gc_threads * ((long long) gridDim.x * gridDim.y * gridDim.z);
				  long long gc_k = (blockIdx.x + (long long) gridDim.x * (blockIdx.y + (long long) gridDim.y * blockIdx.z)) * gc_threads
				      + threadIdx.x + (long long) blockDim.x * (threadIdx.y + (long long) blockDim.y * threadIdx.z);
				  for (; gc_k < n; gc_k += gc_stride) {
				    const int i = (int) gc_k;
				""");
		CudaWriter.statements(out, statements, "    ");
		out.append("  }\n}\n");
		return CudaWriter.preludeFor(out.toString()) + out;
	}

	static String javaParams(List<Param> params, int first) {
		StringBuilder text = new StringBuilder();
		int index = first;
		for (Param param : params) {
			if (param.array()) {
				text.append("\t\tfinal ").append(param.type().buffer()).append(' ').append(param.name()).append(" = gc_args.")
					.append(param.type().view()).append('(').append(index).append(");\n");
			}
			else {
				text.append("\t\tfinal ").append(param.type().java()).append(' ').append(param.name()).append(" = gc_args.")
					.append(param.type().scalarGetter()).append('(').append(index).append(");\n");
			}
			index++;
		}
		return text.toString();
	}

	private static String java(String javaClass, List<Param> params, List<Ast.Stmt> statements) {
		StringBuilder out = new StringBuilder();
		out.append("public final class ").append(javaClass).append(" implements dev.gpucompute.CpuKernel {\n\n");
		out.append("\tpublic void run(dev.gpucompute.CpuKernel.Block gc_block, dev.gpucompute.CpuKernel.Args gc_args) {\n");
		out.append("\t\tfinal int n = gc_args.i32(0);\n");
		out.append(javaParams(params, 1));
		out.append("""
						// The elements the CUDA kernel's threads of this block cover, in the same grid-stride loop.
						final dev.gpucompute.Dim3 gc_bd = gc_block.blockDim();
						final dev.gpucompute.Dim3 gc_gd = gc_block.gridDim();
						final long gc_threads = gc_bd.volume();
						final long gc_stride = gc_gd.volume() * gc_threads;
						final long gc_first = (gc_block.x() + (long) gc_gd.x() * (gc_block.y() + (long) gc_gd.y() * gc_block.z())) * gc_threads;
						for (long gc_base = gc_first; gc_base < n; gc_base += gc_stride) {
							final int gc_end = (int) Math.min((long) n, gc_base + gc_threads);
							for (int i = (int) gc_base; i < gc_end; i++) {
				""");
		JavaWriter.statements(out, statements, "\t\t\t\t");
		out.append("\t\t\t}\n\t\t}\n\t}\n\n");
		out.append(JavaWriter.helpersFor(out.toString()));
		out.append("}\n");
		return out.toString();
	}

}
