package dev.gpucompute.internal.expression;

import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Picks the helpers a generated kernel calls out of a block of helper definitions, so that a kernel's
 * source carries only what it uses (Janino's compile time grows with the source). The block is groups
 * separated by blank lines, each defining one helper name (overloads included); a group without a
 * helper (a comment) is always kept. No helper calls another.
 */
final class Helpers {

	private static final Pattern NAME = Pattern.compile("\\b(gc_\\w+)\\(");

	private Helpers() {
	}

	static String used(String helpers, String code) {
		StringBuilder kept = new StringBuilder();
		for (String group : helpers.split("\n\\s*\n")) {
			if (group.isBlank()) {
				continue;
			}
			Matcher name = NAME.matcher(group);
			if (!name.find() || Pattern.compile("\\b" + name.group(1) + "\\(").matcher(code).find()) {
				kept.append(group.stripTrailing()).append('\n');
			}
		}
		return kept.toString();
	}

}
