package dev.gpucompute.spi;

import java.util.Collection;
import java.util.Comparator;
import java.util.List;
import java.util.function.Function;

import org.jspecify.annotations.Nullable;

/**
 * "Did you mean" for error reports: the known name nearest to a misspelled one, and the edit
 * distance behind it. One rule for the runtime and its front ends: the kernel discovery
 * ({@code dev.gpucompute.kernels}) suggests kernel directories with it, the Spring starter property
 * names and {@code gpu.kernels.locations} entries. Stateless and thread-safe.
 */
public final class Suggestions {

	private Suggestions() {
	}

	/**
	 * The known name nearest to {@code name}: the one fewest edits away when that is close enough
	 * to be a typo (a fifth of the name, at least two edits), else the only known name that ends
	 * with the same key (a key set in the wrong group), else {@code null}.
	 */
	public static @Nullable String nearest(String name, Collection<String> known) {
		String best = null;
		int bestDistance = Integer.MAX_VALUE;
		for (String candidate : known) {
			int distance = distance(name, candidate);
			if (distance < bestDistance) {
				best = candidate;
				bestDistance = distance;
			}
		}
		if (best != null && bestDistance <= Math.max(2, name.length() / 5)) {
			return best;
		}
		String key = name.substring(name.lastIndexOf('.') + 1);
		String sameKey = null;
		for (String candidate : known) {
			if (candidate.endsWith("." + key)) {
				if (sameKey != null) {
					return null;
				}
				sameKey = candidate;
			}
		}
		return sameKey;
	}

	/**
	 * The candidates for a missing {@code name} to list in a report: the {@code limit} whose names are
	 * fewest edits from it, closest first, ties in the candidates' natural order.
	 * @param nameOf the part of a candidate to compare with {@code name} (a path's file name, say)
	 */
	public static <T extends Comparable<? super T>> List<T> closest(String name, Collection<T> candidates,
			Function<? super T, String> nameOf, int limit) {
		return candidates.stream()
			.sorted(Comparator.comparingInt((T candidate) -> distance(name, nameOf.apply(candidate)))
				.thenComparing(Comparator.naturalOrder()))
			.limit(limit)
			.toList();
	}

	/**
	 * Whether {@code candidate} is close enough to a missing {@code name} to call it what was likely
	 * meant: at most two edits away (a location's "did you mean", where {@link #nearest} weighs
	 * property names).
	 */
	public static boolean isLikelyMeant(String name, String candidate) {
		return distance(name, candidate) <= 2;
	}

	/**
	 * The Levenshtein distance between two strings: the fewest single-character insertions,
	 * deletions and substitutions that turn one into the other.
	 */
	public static int distance(String a, String b) {
		int[] previous = new int[b.length() + 1];
		int[] current = new int[b.length() + 1];
		for (int j = 0; j <= b.length(); j++) {
			previous[j] = j;
		}
		for (int i = 1; i <= a.length(); i++) {
			current[0] = i;
			for (int j = 1; j <= b.length(); j++) {
				int substitution = previous[j - 1] + ((a.charAt(i - 1) == b.charAt(j - 1)) ? 0 : 1);
				current[j] = Math.min(substitution, Math.min(previous[j], current[j - 1]) + 1);
			}
			int[] swap = previous;
			previous = current;
			current = swap;
		}
		return previous[b.length()];
	}

}
