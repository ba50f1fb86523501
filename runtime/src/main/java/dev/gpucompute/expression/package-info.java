/**
 * Kernels written once: {@link dev.gpucompute.expression.ElementwiseKernel} (a body run for every
 * element) and {@link dev.gpucompute.expression.ReductionKernel} (map, reduce, identity, post-map, over
 * the whole input or fixed-size segments), each generating CUDA C for the CUDA backend and Java for
 * the CPU backend from the same expressions, with the same bits on both where IEEE 754 defines the
 * result. They give ordinary {@link dev.gpucompute.KernelSource}s, so they load, launch and serve as
 * kernel beans like hand-written kernels. {@link dev.gpucompute.expression.ExpressionKernel} tells
 * what was generated and how close the two backends' results are;
 * {@link dev.gpucompute.expression.KernelExpressionException} reports a mistake with its line and column.
 *
 * <p>The language, its operations' definitions and the order of a reduction are in docs/guide.md.
 * Expressions are code the application supplies: never build one from request data.
 *
 * <p>Depends on the API ({@code dev.gpucompute}) and the expression compiler (an internal package).
 */
@NullMarked
package dev.gpucompute.expression;

import org.jspecify.annotations.NullMarked;
