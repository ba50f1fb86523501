package dev.gpucompute.cuda;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.concurrent.atomic.AtomicBoolean;

import org.junit.jupiter.api.Test;
import dev.gpucompute.contract.VirtualThreads;

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
		AtomicBoolean seen = new AtomicBoolean();
		Thread thread = VirtualThreads.start(() -> seen.set(CudaPrimaryContext.isVirtual(Thread.currentThread())));
		thread.join();
		assertThat(seen).isTrue();
	}

}
