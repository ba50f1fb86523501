package dev.gpucompute.internal.pool;

import java.lang.reflect.Proxy;
import java.util.List;
import java.util.function.Consumer;

import dev.gpucompute.GpuException;
import dev.gpucompute.StreamPriority;
import dev.gpucompute.spi.DeviceBackend;
import dev.gpucompute.spi.NativeEvent;
import dev.gpucompute.spi.NativeStream;

/**
 * A native stream that does nothing but remember whether it was destroyed, for the unit tests of
 * the pool's parts, which never launch work; and a backend that only creates them.
 */
final class FakeStream implements NativeStream {

	private final String name;

	boolean destroyed;

	/** Thrown by {@link #destroy()} when set. */
	RuntimeException destroyFailure;

	/** What {@link #isReusable()} answers; a test clears it as a backend that lost control of the stream. */
	volatile boolean reusable = true;

	FakeStream(String name) {
		this.name = name;
	}

	/** A slot of a new fake stream. */
	static PoolSlot slot(String name, StreamPriority priority) {
		return new PoolSlot(new FakeStream(name), priority);
	}

	/**
	 * A backend whose {@code createStream} makes fake streams (listed in {@code created}) or, once
	 * {@code failure} holds an exception, throws it; every other method throws.
	 */
	static DeviceBackend backend(List<FakeStream> created, RuntimeException[] failure) {
		return (DeviceBackend) Proxy.newProxyInstance(FakeStream.class.getClassLoader(),
				new Class<?>[] { DeviceBackend.class }, (proxy, method, args) -> {
					if (!method.getName().equals("createStream")) {
						throw new UnsupportedOperationException(method.getName());
					}
					if (failure[0] != null) {
						throw failure[0];
					}
					FakeStream stream = new FakeStream((String) args[1]);
					created.add(stream);
					return stream;
				});
	}

	@Override
	public String name() {
		return this.name;
	}

	@Override
	public void synchronize() {
	}

	@Override
	public boolean query() {
		return true;
	}

	@Override
	public void waitEvent(NativeEvent event) {
	}

	@Override
	public void whenDone(Consumer<GpuException> callback) {
		callback.accept(null);
	}

	@Override
	public void discardFailures() {
	}

	@Override
	public boolean isReusable() {
		return this.reusable;
	}

	@Override
	public void destroy() {
		this.destroyed = true;
		if (this.destroyFailure != null) {
			throw this.destroyFailure;
		}
	}

}
