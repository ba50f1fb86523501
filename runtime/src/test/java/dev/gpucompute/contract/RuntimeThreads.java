package dev.gpucompute.contract;

import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

/** The runtime's threads ("gpu-..."), to check that nothing outlives a context. */
public final class RuntimeThreads {

	private RuntimeThreads() {
	}

	/** The threads alive now. */
	public static Set<Thread> snapshot() {
		return Thread.getAllStackTraces().keySet();
	}

	/**
	 * The runtime's threads started since {@code before} that are still alive after a grace period of
	 * {@code graceSeconds}, other than the process-wide leak cleaner and those whose names start with
	 * one of {@code keep} (a context that stays open).
	 */
	public static List<String> leftSince(Set<Thread> before, int graceSeconds, String... keep) throws InterruptedException {
		long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(graceSeconds);
		List<String> left;
		do {
			left = Thread.getAllStackTraces().keySet().stream()
				.filter((thread) -> !before.contains(thread) && thread.isAlive() && thread.getName().startsWith("gpu-")
						&& !thread.getName().equals("gpu-leak-cleaner") && !startsWithAny(thread.getName(), keep))
				.map(Thread::getName)
				.sorted()
				.collect(Collectors.toList());
			if (left.isEmpty()) {
				return left;
			}
			Thread.sleep(20);
		}
		while (System.nanoTime() < end);
		return left;
	}

	private static boolean startsWithAny(String name, String[] prefixes) {
		for (String prefix : prefixes) {
			if (name.startsWith(prefix)) {
				return true;
			}
		}
		return false;
	}

}
