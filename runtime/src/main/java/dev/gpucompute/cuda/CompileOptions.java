package dev.gpucompute.cuda;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;

/**
 * The options a kernel is compiled with: the context's ({@code gpu.kernels.compile-options}, for every
 * kernel) followed by the kernel's own ({@code KernelSource.compileOptions}), where the kernel's own
 * win for what they set. NVRTC refuses an option given twice ("defined more than once"), and a
 * context-wide {@code --use_fast_math} next to a kernel's IEEE options is accepted but turns
 * {@code sinf} into the approximate instruction all the same: so a context option that sets the same
 * thing as one of the kernel's is left out for that kernel. What counts as the same thing: the same
 * option name ({@code -ftz=true} and {@code --ftz=false}, {@code -std=c++14} and {@code -std=c++17}),
 * and {@code --use_fast_math} sets {@code -ftz}, {@code -fmad}, {@code -prec-div} and
 * {@code -prec-sqrt} too. Expression kernels declare all four math options (IEEE) or fast math, and
 * their C++ dialect; other options of the context ({@code -lineinfo}, {@code -maxrregcount=64}, ...)
 * apply to them as to every kernel. Stateless.
 */
final class CompileOptions {

	/** What {@code --use_fast_math} implies, besides itself. */
	private static final List<String> FAST_MATH_IMPLIES = List.of("ftz", "fmad", "prec-div", "prec-sqrt");

	private static final String FAST_MATH = "use_fast_math";

	private CompileOptions() {
	}

	/**
	 * The context's options and the kernel's, merged.
	 * @param options what the compiler gets, in order
	 * @param dropped the context's options left out because the kernel sets the same thing
	 */
	record Merged(List<String> options, List<String> dropped) {
	}

	static Merged merge(List<String> context, List<String> kernel) {
		Set<String> kernelSets = new HashSet<>();
		for (String option : kernel) {
			kernelSets.addAll(sets(option));
		}
		List<String> options = new ArrayList<>(context.size() + kernel.size());
		List<String> dropped = new ArrayList<>(0);
		for (String option : context) {
			boolean overridden = false;
			for (String knob : sets(option)) {
				overridden |= kernelSets.contains(knob);
			}
			(overridden ? dropped : options).add(option);
		}
		options.addAll(kernel);
		return new Merged(List.copyOf(options), List.copyOf(dropped));
	}

	/** The settings an option sets: its name without dashes and value, and for fast math what it implies. */
	private static List<String> sets(String option) {
		String name = option.strip();
		while (name.startsWith("-")) {
			name = name.substring(1);
		}
		int eq = name.indexOf('=');
		if (eq >= 0) {
			name = name.substring(0, eq);
		}
		name = name.toLowerCase(Locale.ROOT);
		if (name.isEmpty()) {
			return List.of();
		}
		if (name.equals(FAST_MATH)) {
			List<String> all = new ArrayList<>(FAST_MATH_IMPLIES);
			all.add(FAST_MATH);
			return all;
		}
		return List.of(name);
	}

}
