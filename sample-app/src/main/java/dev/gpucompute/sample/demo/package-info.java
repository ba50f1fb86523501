/**
 * The demo load ({@code sample.demo-load.enabled}, the {@code demo} profile): a few client threads
 * searching a collection of clustered random vectors, so that the endpoint, the meters and the
 * dashboard show real activity.
 */
@NullMarked
package dev.gpucompute.sample.demo;

import org.jspecify.annotations.NullMarked;
