package dev.gpucompute.benchmarks;

import org.openjdk.jmh.annotations.AuxCounters;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;

/**
 * Bytes moved to or from memory (reads plus writes), reported by JMH as the secondary metric
 * {@code bytes} in "ops/s", i.e. bytes per second: divide by 1e9 for GB/s.
 */
@State(Scope.Thread)
@AuxCounters(AuxCounters.Type.OPERATIONS)
public class Traffic {

	public long bytes;

	@Setup(Level.Iteration)
	public void reset() {
		this.bytes = 0;
	}

}
