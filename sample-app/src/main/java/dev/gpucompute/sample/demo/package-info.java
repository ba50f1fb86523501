/**
 * The demo load ({@code sample.demo-load.enabled}, the {@code demo} profile): a few client threads
 * searching a collection of clustered random vectors, so that the endpoint, the meters and the
 * dashboard show real activity.
 */
package dev.gpucompute.sample.demo;
