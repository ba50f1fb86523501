package dev.gpucompute.sample.search;

import java.util.concurrent.atomic.AtomicLong;

/**
 * The share of device memory that collections may hold ({@code sample.memory-budget}). Storage is
 * reserved here before it is allocated, so a write that would not fit is refused with a clear 4xx
 * answer instead of running the device out of memory for everyone (searches need scratch memory
 * too). Thread-safe.
 */
public final class DeviceMemoryBudget {

	private final long budget;

	private final AtomicLong reserved = new AtomicLong();

	public DeviceMemoryBudget(long budgetBytes) {
		if (budgetBytes < 1) {
			throw new IllegalArgumentException("The memory budget must be positive, got " + budgetBytes);
		}
		this.budget = budgetBytes;
	}

	/** Reserves {@code bytes} if they fit; returns whether they did. */
	public boolean tryReserve(long bytes) {
		while (true) {
			long now = this.reserved.get();
			if (bytes > this.budget - now) {
				return false;
			}
			if (this.reserved.compareAndSet(now, now + bytes)) {
				return true;
			}
		}
	}

	/** Returns a reservation. */
	public void release(long bytes) {
		this.reserved.addAndGet(-bytes);
	}

	public long budgetBytes() {
		return this.budget;
	}

	public long reservedBytes() {
		return this.reserved.get();
	}

}
