package dev.gpucompute.test.guide;

import dev.gpucompute.DeviceBuffer;
import dev.gpucompute.ElementType;
import dev.gpucompute.GpuLauncher;
import dev.gpucompute.HostArray;
import dev.gpucompute.expression.Reduction;
import dev.gpucompute.expression.ReductionKernel;

/** A segmented sum: the total of each row of a row-major matrix, weighted by a scalar. */
public final class RowTotals {

	public static final Reduction ROW_TOTALS = ReductionKernel.named("row_totals")
		.in("float weight, float[] m")
		.out("float[] totals")             // one element per segment
		.map("weight * m")
		.reduce("a + b")
		.identity("0.0f")
		.segmented()                       // parameters: int n, int segmentLength, then in, then out
		.build();

	private RowTotals() {
	}

	/** The weighted total of each of the {@code rows} rows of {@code matrix}. */
	public static float[] totals(GpuLauncher launcher, float[] matrix, int rows, float weight) {
		int columns = matrix.length / rows;
		float[] totals = new float[rows];
		try (DeviceBuffer m = launcher.upload(HostArray.of(matrix));
				DeviceBuffer out = launcher.allocate(rows, ElementType.FLOAT)) {
			ROW_TOTALS.launch(launcher, matrix.length, columns, weight, m, out);   // one launch, one block per row
			out.download(HostArray.of(totals)).join();
		}
		return totals;
	}

}
