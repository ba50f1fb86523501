package dev.gpucompute.autoconfigure;

/**
 * What start-up does with a {@code gpu.*} key that no gpu-compute property binds
 * ({@code gpu.unknown-properties}): a misspelled key would otherwise be ignored silently and its
 * default used.
 */
public enum UnknownPropertiesPolicy {

	/** Fail start-up with a report naming each unknown key, where it was set and the nearest known key. */
	FAIL,

	/** Log each unknown key, where it was set and the nearest known key, at WARN, and start. */
	WARN,

	/** Do not look for unknown keys. */
	IGNORE

}
