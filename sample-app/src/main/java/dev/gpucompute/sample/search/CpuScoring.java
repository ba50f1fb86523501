package dev.gpucompute.sample.search;

/**
 * Which {@link TileScorer} the CPU twins score with, chosen once per JVM: the Vector API path
 * ({@link SimdTileScorer}) where the {@code jdk.incubator.vector} module is present, else the scalar
 * path (same bits, slower).
 *
 * <p>Thread-safe: the choice is made when the class initialises and never changes.
 */
public final class CpuScoring {

	private static final org.slf4j.Logger log = org.slf4j.LoggerFactory.getLogger(CpuScoring.class);

	/** The JVM option that enables the SIMD path of the CPU backend's scoring. */
	public static final String SIMD_FLAG = "--add-modules jdk.incubator.vector";

	private static final TileScorer SCORER = chooseScorer();

	private CpuScoring() {
	}

	/**
	 * Loads the Vector API path by name, so that a JVM without {@code jdk.incubator.vector} never links
	 * it and runs the scalar path instead (same bits, slower).
	 */
	private static TileScorer chooseScorer() {
		if (ModuleLayer.boot().findModule("jdk.incubator.vector").isEmpty()) {
			return new TileScorer.Scalar();
		}
		try {
			TileScorer simd = (TileScorer) Class.forName(CpuScoring.class.getPackageName() + ".SimdTileScorer")
				.getDeclaredMethod("create")
				.invoke(null);
			return (simd != null) ? simd : new TileScorer.Scalar();
		}
		catch (ReflectiveOperationException | LinkageError ex) {
			log.debug("Vector API path unavailable", ex);
			return new TileScorer.Scalar();
		}
	}

	/**
	 * One line for the start-up log saying which scoring path the CPU backend uses and, on the scalar
	 * path, the JVM option that enables SIMD.
	 */
	public static String scoringPath() {
		if (SCORER instanceof TileScorer.Scalar) {
			return "CPU scoring: " + SCORER.description() + "; start the JVM with " + SIMD_FLAG
					+ " for the SIMD path (same results, several times faster)";
		}
		return "CPU scoring: " + SCORER.description();
	}

	/** Whether the CPU backend scores with the Vector API. */
	static boolean simdActive() {
		return !(SCORER instanceof TileScorer.Scalar);
	}

	/** The scoring path the twins use. */
	static TileScorer scorer() {
		return SCORER;
	}

}
