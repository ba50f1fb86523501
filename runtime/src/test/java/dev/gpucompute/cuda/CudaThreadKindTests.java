package dev.gpucompute.cuda;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.reflect.Method;
import java.util.concurrent.atomic.AtomicBoolean;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * The virtual-thread check behind the backend's context-currency cache and its per-thread default
 * stream; pure Java, runs without a driver. The virtual case runs only on Java 21+.
 */
class CudaThreadKindTests {

	@Test
	void platformThreadsAreNotVirtual() throws Exception {
		assertThat(CudaPrimaryContext.isVirtual(Thread.currentThread())).isFalse();
		AtomicBoolean seen = new AtomicBoolean(true);
		Thread thread = new Thread(() -> seen.set(CudaPrimaryContext.isVirtual(Thread.currentThread())));
		thread.start();
		thread.join();
		assertThat(seen).isFalse();
	}

	@Test
	void virtualThreadsAreRecognised() throws Exception {
		Method startVirtualThread;
		try {
			startVirtualThread = Thread.class.getMethod("startVirtualThread", Runnable.class);
		}
		catch (NoSuchMethodException ex) {
			Assumptions.abort("no virtual threads before Java 21");
			return;
		}
		AtomicBoolean seen = new AtomicBoolean();
		Thread thread = (Thread) startVirtualThread.invoke(null,
				(Runnable) () -> seen.set(CudaPrimaryContext.isVirtual(Thread.currentThread())));
		thread.join();
		assertThat(seen).isTrue();
	}

}
