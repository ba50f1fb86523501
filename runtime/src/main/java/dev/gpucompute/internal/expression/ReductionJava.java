package dev.gpucompute.internal.expression;

import java.util.List;

/**
 * The Java of a reduction kernel: the order of {@link ReductionGenerator}, with the lanes held in an
 * array and filled element by element (lane {@code l} still combines its values from left to right,
 * as CUDA's thread {@code l} does), so that the input is read in order.
 */
final class ReductionJava {

	private ReductionJava() {
	}

	static String source(String javaClass, ReductionGenerator.Shape shape) {
		String acc = shape.acc().java();
		String out = shape.result().type().java();
		int lanes = ReductionGenerator.LANES;
		StringBuilder text = new StringBuilder();
		text.append("public final class ").append(javaClass).append(" implements dev.gpucompute.CpuKernel {\n\n");
		text.append("\tpublic void run(dev.gpucompute.CpuKernel.Block gc_block, dev.gpucompute.CpuKernel.Args gc_args) {\n");
		text.append("\t\tfinal int n = gc_args.i32(0);\n");
		int next = 1;
		if (shape.segmented()) {
			text.append("\t\tfinal int segmentLength = gc_args.i32(1);\n");
			next = 2;
		}
		text.append(ElementwiseGenerator.javaParams(shape.inputs(), next));
		next += shape.inputs().size();
		text.append(ElementwiseGenerator.javaParams(List.of(shape.result()), next));
		next++;
		String result = shape.result().name();
		if (!shape.segmented()) {
			text.append("\t\tfinal ").append(shape.acc().buffer()).append(" gc_partials = gc_args.").append(shape.acc().view())
				.append('(').append(next).append(");\n");
			text.append("\t\tfinal int gc_phase = gc_args.i32(").append(next + 1).append(");\n");
		}
		text.append("""
						final dev.gpucompute.Dim3 gc_gd = gc_block.gridDim();
						final long gc_blocks = gc_gd.volume();
						final long gc_b = gc_block.x() + (long) gc_gd.x() * (gc_block.y() + (long) gc_gd.y() * gc_block.z());
						final ACC[] gc_lane = new ACC[LANES];
				""".replace("ACC", acc).replace("LANES", Integer.toString(lanes)));
		String mapArgs = ", " + String.join(", ", shape.mapArgs());
		String postArgs = ", " + String.join(", ", shape.postArgs());
		if (shape.segmented()) {
			text.append("\t\tfinal long gc_segments = (n > 0 && segmentLength > 0) ? ((long) n + segmentLength - 1) / segmentLength : 0;\n")
				.append("\t\tfor (long gc_s = gc_b; gc_s < gc_segments; gc_s += gc_blocks) {\n")
				.append("\t\t\tfinal long gc_start = gc_s * segmentLength;\n")
				.append("\t\t\tfinal long gc_m = Math.min((long) n - gc_start, (long) segmentLength);\n")
				.append(reduce("\t\t\t", acc, "gc_map((int) (gc_start + %K%)" + mapArgs + ")", lanes))
				.append("\t\t\t").append(result).append(".put((int) gc_s, gc_post(gc_lane[0]").append(postArgs).append("));\n")
				.append("\t\t}\n\t}\n\n");
		}
		else {
			int chunk = ReductionGenerator.CHUNK;
			text.append("\t\tfinal long gc_chunks = (n > 0) ? ((long) n + ").append(chunk - 1).append(") / ").append(chunk)
				.append(" : 0;\n")
				.append("\t\tif (gc_phase == 1) {\n")
				.append("\t\t\tfor (long gc_c = gc_b; gc_c < gc_chunks; gc_c += gc_blocks) {\n")
				.append("\t\t\t\tfinal long gc_start = gc_c * ").append(chunk).append(";\n")
				.append("\t\t\t\tfinal long gc_m = Math.min((long) n - gc_start, ").append(chunk).append("L);\n")
				.append(reduce("\t\t\t\t", acc, "gc_map((int) (gc_start + %K%)" + mapArgs + ")", lanes))
				.append("\t\t\t\tgc_partials.put((int) gc_c, gc_lane[0]);\n")
				.append("\t\t\t}\n\t\t\treturn;\n\t\t}\n")
				.append("\t\tif (gc_b != 0) {\n\t\t\treturn; // phases 0 and 2 run in block 0\n\t\t}\n")
				.append("\t\tfinal long gc_m = (gc_phase == 2) ? gc_chunks : Math.max(0L, (long) n);\n")
				.append("\t\t").append(acc).append(" gc_v = gc_identity();\n")
				.append("\t\tif (gc_m > 0 && gc_phase == 2) {\n")
				.append(reduce("\t\t\t", acc, "gc_partials.get((int) (%K%))", lanes))
				.append("\t\t\tgc_v = gc_lane[0];\n")
				.append("\t\t}\n\t\telse if (gc_m > 0) {\n")
				.append(reduce("\t\t\t", acc, "gc_map((int) (%K%)" + mapArgs + ")", lanes))
				.append("\t\t\tgc_v = gc_lane[0];\n\t\t}\n")
				.append("\t\t").append(result).append(".put(0, gc_post(gc_v").append(postArgs).append("));\n\t}\n\n");
		}
		text.append("\tprivate static ").append(acc).append(" gc_reduce(").append(acc).append(" a, ").append(acc)
			.append(" b) {\n\t\treturn ").append(JavaWriter.expr(shape.reduce())).append(";\n\t}\n\n");
		text.append("\tprivate static ").append(acc).append(" gc_identity() {\n\t\treturn ")
			.append(JavaWriter.expr(shape.identity())).append(";\n\t}\n\n");
		text.append("\tprivate static ").append(acc).append(" gc_map(int i, int n")
			.append(shape.segmented() ? ", int segmentLength" : "").append(javaParams(shape.inputs()))
			.append(") {\n\t\treturn ").append(JavaWriter.expr(shape.map())).append(";\n\t}\n\n");
		text.append("\tprivate static ").append(out).append(" gc_post(").append(acc).append(" a, int n")
			.append(shape.segmented() ? ", int segmentLength" : "").append(javaParams(shape.scalars()))
			.append(") {\n\t\treturn ").append(JavaWriter.expr(shape.postMap())).append(";\n\t}\n\n");
		text.append(JavaWriter.helpersFor(text.toString())).append("}\n");
		return text.toString();
	}

	/**
	 * The fixed order over {@code load(0 .. gc_m)} ({@code %K%} in {@code load} stands for the index),
	 * gc_m at least 1, leaving the result in {@code gc_lane[0]}.
	 */
	private static String reduce(String indent, String acc, String load, int lanes) {
		return indent + "final int gc_lanes = (int) Math.min(gc_m, " + lanes + "L);\n"
				+ indent + "for (int gc_l = 0; gc_l < gc_lanes; gc_l++) {\n"
				+ indent + "\tgc_lane[gc_l] = " + load.replace("%K%", "gc_l") + ";\n"
				+ indent + "}\n"
				+ indent + "// Lane l combines its values from left to right: element by element across the lanes.\n"
				+ indent + "for (long gc_k = " + lanes + "; gc_k < gc_m; gc_k += " + lanes + ") {\n"
				+ indent + "\tfinal int gc_span = (int) Math.min(gc_m - gc_k, " + lanes + "L);\n"
				+ indent + "\tfor (int gc_l = 0; gc_l < gc_span; gc_l++) {\n"
				+ indent + "\t\tgc_lane[gc_l] = gc_reduce(gc_lane[gc_l], " + load.replace("%K%", "gc_k + gc_l") + ");\n"
				+ indent + "\t}\n"
				+ indent + "}\n"
				+ indent + "for (int gc_h = " + (lanes / 2) + "; gc_h > 0; gc_h >>= 1) {\n"
				+ indent + "\tfor (int gc_j = 0; gc_j < gc_h && gc_j + gc_h < gc_lanes; gc_j++) {\n"
				+ indent + "\t\tgc_lane[gc_j] = gc_reduce(gc_lane[gc_j], gc_lane[gc_j + gc_h]);\n"
				+ indent + "\t}\n"
				+ indent + "}\n";
	}

	private static String javaParams(List<Param> params) {
		StringBuilder text = new StringBuilder();
		for (Param param : params) {
			text.append(", ").append(param.array() ? param.type().buffer() : param.type().java()).append(' ')
				.append(param.name());
		}
		return text.toString();
	}

}
