package dev.gpucompute.benchmarks;

import java.lang.ref.Cleaner;
import java.util.concurrent.TimeUnit;

import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.State;

/**
 * The price of two JDK building blocks that the runtime's hot paths use, on the machine at hand:
 * a clock read and a {@link Cleaner} registration that is cleaned at once (what every lease, event
 * and buffer does). They explain part of the lease and event figures, and they vary a lot between
 * bare metal and virtual machines.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@State(Scope.Benchmark)
public class MachineBenchmark {

	private static final Cleaner CLEANER = Cleaner.create();

	private static final Runnable NOTHING = () -> {
	};

	@Benchmark
	public long nanoTime() {
		return System.nanoTime();
	}

	@Benchmark
	public Object cleanerRegisterClean() {
		Object owner = new Object();
		CLEANER.register(owner, NOTHING).clean();
		return owner;
	}

}
