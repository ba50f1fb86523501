/**
 * What every room shares (not API): the context's lifecycle and identity ({@code ContextState}),
 * the work gate that lets copies begun before close finish, completions of stream work
 * ({@code ContextCompletions}, {@code CompletionFuture}), leak tracking ({@code Leaks},
 * {@code LeakRegistry}) and the context's threads. Depends on no other room.
 */
@NullMarked
package dev.gpucompute.internal.core;

import org.jspecify.annotations.NullMarked;
