package dev.gpucompute.benchmarks;

import java.util.concurrent.atomic.LongAdder;

import dev.gpucompute.listener.GpuListener;

/**
 * A listener that counts like a metrics binding does (Micrometer counters are adders): what a
 * service with metrics on pays per launch and per lease.
 */
final class CountingListener implements GpuListener {

	final LongAdder launches = new LongAdder();

	final LongAdder failures = new LongAdder();

	final LongAdder timed = new LongAdder();

	final LongAdder timedNanos = new LongAdder();

	final LongAdder leases = new LongAdder();

	@Override
	public void kernelLaunched(String kernel, boolean success) {
		(success ? this.launches : this.failures).increment();
	}

	@Override
	public void kernelFailed(String kernel) {
		this.failures.increment();
	}

	@Override
	public void kernelTimed(String kernel, long nanos) {
		this.timed.increment();
		this.timedNanos.add(nanos);
	}

	@Override
	public void leaseAcquired(long waitNanos) {
		this.leases.increment();
	}

}
