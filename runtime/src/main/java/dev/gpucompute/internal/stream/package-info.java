/**
 * The stream room (not API): streams and events as the API sees them ({@code StreamHandle},
 * {@code EventHandle}), the event registry ({@code Events}), each thread's current stream and its
 * scopes ({@code Streams}, {@code ScopeHandle}).
 */
@NullMarked
package dev.gpucompute.internal.stream;

import org.jspecify.annotations.NullMarked;
