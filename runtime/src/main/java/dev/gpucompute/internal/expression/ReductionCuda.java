package dev.gpucompute.internal.expression;

import java.util.List;

/** The CUDA C of a reduction kernel; the order is {@link ReductionGenerator}'s. */
final class ReductionCuda {

	private ReductionCuda() {
	}

	static String source(ReductionGenerator.Shape shape) {
		String acc = shape.acc().c();
		String out = shape.result().type().c();
		StringBuilder text = new StringBuilder();
		text.append("\n#define GC_LANES ").append(ReductionGenerator.LANES).append('\n');
		text.append("#define GC_CHUNK ").append(ReductionGenerator.CHUNK).append("\n\n");
		text.append("__device__ __forceinline__ ").append(acc).append(" gc_reduce(").append(acc).append(" a, ").append(acc)
			.append(" b) { return ").append(CudaWriter.expr(shape.reduce())).append("; }\n");
		text.append("__device__ __forceinline__ ").append(acc).append(" gc_identity() { return ")
			.append(CudaWriter.expr(shape.identity())).append("; }\n");
		text.append("__device__ __forceinline__ ").append(acc).append(" gc_map(int i, int n")
			.append(shape.segmented() ? ", int segmentLength" : "").append(ElementwiseGenerator.cudaParams(shape.inputs()))
			.append(") { return ").append(CudaWriter.expr(shape.map())).append("; }\n");
		text.append("__device__ __forceinline__ ").append(out).append(" gc_post(").append(acc).append(" a, int n")
			.append(shape.segmented() ? ", int segmentLength" : "").append(ElementwiseGenerator.cudaParams(shape.scalars()))
			.append(") { return ").append(CudaWriter.expr(shape.postMap())).append("; }\n\n");
		text.append("""
				// Reduces v(0) .. v(m - 1), m >= 1, with every thread of the block, in the kernel's fixed order: lane l
				// combines v(l), v(l + GC_LANES), ... from left to right, then a halving tree combines the lanes.
				// Any block size gives the same result; the result is returned to every thread.
				template <typename Load>
				__device__ ACC gc_block_reduce(long long m, Load load) {
				  __shared__ ACC gc_lane[GC_LANES];
				  const int gc_t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
				  const int gc_threads = blockDim.x * blockDim.y * blockDim.z;
				  for (int gc_l = gc_t; gc_l < GC_LANES; gc_l += gc_threads) {
				    if (gc_l < m) {
				      ACC gc_a = load(gc_l);
				      for (long long gc_k = gc_l + GC_LANES; gc_k < m; gc_k += GC_LANES) {
				        gc_a = gc_reduce(gc_a, load(gc_k));
				      }
				      gc_lane[gc_l] = gc_a;
				    }
				  }
				  __syncthreads();
				  const int gc_active = (m < GC_LANES) ? (int) m : GC_LANES;
				  for (int gc_h = GC_LANES / 2; gc_h > 0; gc_h >>= 1) {
				    for (int gc_j = gc_t; gc_j < gc_h; gc_j += gc_threads) {
				      if (gc_j + gc_h < gc_active) {
				        gc_lane[gc_j] = gc_reduce(gc_lane[gc_j], gc_lane[gc_j + gc_h]);
				      }
				    }
				    __syncthreads();
				  }
				  const ACC gc_result = gc_lane[0];
				  __syncthreads();
				  return gc_result;
				}

				""".replace("ACC", acc));
		String mapArgs = ", " + String.join(", ", shape.mapArgs());
		String postArgs = ", " + String.join(", ", shape.postArgs());
		text.append("extern \"C\" __global__ void ").append(shape.name());
		text.append("(int n").append(shape.segmented() ? ", int segmentLength" : "")
			.append(ElementwiseGenerator.cudaParams(shape.inputs()))
			.append(ElementwiseGenerator.cudaParams(List.of(shape.result())));
		if (!shape.segmented()) {
			text.append(", ").append(acc).append("* __restrict__ gc_partials, int gc_phase");
		}
		text.append(") {\n");
		text.append("""
				  const long long gc_blocks = (long long) gridDim.x * gridDim.y * gridDim.z;
				  const long long gc_b = blockIdx.x + (long long) gridDim.x * (blockIdx.y + (long long) gridDim.y * blockIdx.z);
				  const bool gc_first = threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0;
				""");
		String result = shape.result().name();
		if (shape.segmented()) {
			text.append("  const long long gc_segments = (n > 0 && segmentLength > 0) ? (n + (long long) segmentLength - 1) / segmentLength : 0;\n")
				.append("  for (long long gc_s = gc_b; gc_s < gc_segments; gc_s += gc_blocks) {\n")
				.append("    const long long gc_start = gc_s * segmentLength;\n")
				.append("    const long long gc_m = ((long long) n - gc_start < segmentLength) ? (long long) n - gc_start : segmentLength;\n")
				.append("    const ").append(acc).append(" gc_v = gc_block_reduce(gc_m, [&](long long gc_k) { return gc_map((int) (gc_start + gc_k)")
				.append(mapArgs).append("); });\n")
				.append("    if (gc_first) ").append(result).append("[gc_s] = gc_post(gc_v").append(postArgs).append(");\n")
				.append("  }\n}\n");
		}
		else {
			text.append("  const long long gc_chunks = (n > 0) ? ((long long) n + GC_CHUNK - 1) / GC_CHUNK : 0;\n")
				.append("  if (gc_phase == 1) {\n")
				.append("    for (long long gc_c = gc_b; gc_c < gc_chunks; gc_c += gc_blocks) {\n")
				.append("      const long long gc_start = gc_c * GC_CHUNK;\n")
				.append("      const long long gc_m = ((long long) n - gc_start < GC_CHUNK) ? (long long) n - gc_start : GC_CHUNK;\n")
				.append("      const ").append(acc).append(" gc_v = gc_block_reduce(gc_m, [&](long long gc_k) { return gc_map((int) (gc_start + gc_k)")
				.append(mapArgs).append("); });\n")
				.append("      if (gc_first) gc_partials[gc_c] = gc_v;\n")
				.append("    }\n    return;\n  }\n")
				.append("  if (gc_b != 0) return;   // phases 0 and 2 run in block 0\n")
				.append("  ").append(acc).append(" gc_v;\n")
				.append("  if (gc_phase == 2) {\n")
				.append("    gc_v = (gc_chunks > 0) ? gc_block_reduce(gc_chunks, [&](long long gc_k) { return gc_partials[gc_k]; }) : gc_identity();\n")
				.append("  } else {\n")
				.append("    gc_v = (n > 0) ? gc_block_reduce(n, [&](long long gc_k) { return gc_map((int) gc_k").append(mapArgs)
				.append("); }) : gc_identity();\n")
				.append("  }\n")
				.append("  if (gc_first) ").append(result).append("[0] = gc_post(gc_v").append(postArgs).append(");\n}\n");
		}
		return CudaWriter.preludeFor(text.toString()) + text;
	}

}
