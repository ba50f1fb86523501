/**
 * The pool room (not API): {@code Pool}, the implementation of {@code StreamPool}: growth up to the
 * maximum, waiting callers served by priority within their limits, exclusive leases ({@code Lease},
 * {@code Leases}) and their checks, lease reports and stall reasons, utilisation sampling.
 */
@NullMarked
package dev.gpucompute.internal.pool;

import org.jspecify.annotations.NullMarked;
