/**
 * The expression compiler behind {@code dev.gpucompute.expression}: a lexer, a parser, a checker
 * that types every expression and refuses what either backend would compute differently, and two
 * writers (CUDA C, Java) that spell out every conversion and every operation C leaves undefined.
 * The Java is compiled with Janino, once per source text. Not exported: it changes without notice.
 */
@NullMarked
package dev.gpucompute.internal.expression;

import org.jspecify.annotations.NullMarked;
