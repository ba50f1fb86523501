/**
 * JMH benchmarks of the runtime, each next to its baseline in the same run so the ratio holds on a
 * noisy machine. Naming: {@code ours*} goes through the public API, {@code baseline*} is what a
 * user would otherwise write (raw SPI, plain Java), {@code cuda*} are raw JCuda baselines that only
 * run on a CUDA device. See {@code BENCHMARKS.md} at the repository root for the figures and
 * {@code benchmarks/run.sh} for the command.
 */
@NullMarked
package dev.gpucompute.benchmarks;

import org.jspecify.annotations.NullMarked;
