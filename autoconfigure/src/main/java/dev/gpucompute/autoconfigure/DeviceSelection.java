package dev.gpucompute.autoconfigure;

import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;

/**
 * The value of {@code gpu.devices}: {@code all}, or device ordinals in the order given.
 *
 * @param all whether every device of the chosen backend is wanted
 * @param ordinals the ordinals listed, in order, without duplicates; empty for {@code all}
 */
record DeviceSelection(boolean all, List<Integer> ordinals) {

	/** The word that selects every device. */
	static final String ALL = "all";

	DeviceSelection {
		ordinals = List.copyOf(ordinals);
	}

	/**
	 * Parses the bound value of {@code gpu.devices}: one element {@code all} (any case), or ordinals
	 * (elements may themselves hold comma-separated ordinals, as a YAML string would).
	 * @param values the bound elements
	 * @return the selection
	 * @throws IllegalArgumentException with a message that completes "gpu.devices ...": an empty
	 * value or element, a word that is not {@code all}, {@code all} next to ordinals, a negative
	 * ordinal, an ordinal listed twice
	 */
	static DeviceSelection parse(List<String> values) {
		List<String> entries = new ArrayList<>();
		for (String value : values) {
			if (value == null || value.isBlank()) {
				throw new IllegalArgumentException("must not contain an empty entry: give 'all' or device ordinals, "
						+ "or remove the property to use gpu.device");
			}
			for (String entry : value.split(",", -1)) {
				entries.add(entry.strip());
			}
		}
		if (entries.isEmpty()) {
			throw new IllegalArgumentException(
					"must not be empty: give 'all' or device ordinals, or remove the property to use gpu.device");
		}
		boolean all = false;
		Set<Integer> ordinals = new LinkedHashSet<>();
		for (String entry : entries) {
			if (entry.isEmpty()) {
				throw new IllegalArgumentException("must not contain an empty entry: give 'all' or device ordinals, "
						+ "or remove the property to use gpu.device");
			}
			if (entry.toLowerCase(Locale.ROOT).equals(ALL)) {
				all = true;
				continue;
			}
			int ordinal;
			try {
				ordinal = Integer.parseInt(entry);
			}
			catch (NumberFormatException ex) {
				throw new IllegalArgumentException("must be 'all' or a list of device ordinals (such as 0,1,2), but "
						+ "contains '" + entry + "'");
			}
			if (ordinal < 0) {
				throw new IllegalArgumentException("must not contain a negative ordinal, but contains " + ordinal);
			}
			if (!ordinals.add(ordinal)) {
				throw new IllegalArgumentException("lists device " + ordinal + " twice");
			}
		}
		if (all && (entries.size() > 1)) {
			throw new IllegalArgumentException("mixes 'all' with other entries: give either 'all' or device ordinals");
		}
		return new DeviceSelection(all, new ArrayList<>(ordinals));
	}

	@Override
	public String toString() {
		return this.all ? ALL : this.ordinals.toString().replaceAll("[\\[\\] ]", "");
	}

}
