package dev.gpucompute.spi;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.concurrent.atomic.AtomicReference;

import org.junit.jupiter.api.Test;
import dev.gpucompute.contract.VirtualThreads;

/** How the runtime names a thread in messages and reports; the virtual cases run on Java 21+. */
class HostThreadsTests {

	@Test
	void aNamedThreadIsNamedByItsName() throws Exception {
		Thread thread = new Thread(() -> {
		}, "http-nio-8080-exec-1");
		assertThat(HostThreads.name(thread)).isEqualTo("http-nio-8080-exec-1");
		assertThat(HostThreads.describe(thread)).isEqualTo("thread 'http-nio-8080-exec-1'");
		assertThat(HostThreads.isVirtual(thread)).isFalse();
	}

	@Test
	void aPlatformThreadWithoutANameIsNamedByItsId() {
		Thread thread = new Thread(() -> {
		}, "");
		assertThat(HostThreads.name(thread)).isEqualTo("thread #" + id(thread));
		assertThat(HostThreads.describe(thread)).isEqualTo("thread #" + id(thread));
	}

	@Test
	void aVirtualThreadWithoutANameIsNamedByItsIdAndKind() throws Exception {
		AtomicReference<String> name = new AtomicReference<>();
		AtomicReference<String> described = new AtomicReference<>();
		Thread thread = VirtualThreads.start(() -> {
			name.set(HostThreads.name(Thread.currentThread()));
			described.set(HostThreads.describe(Thread.currentThread()));
		});
		thread.join();
		assertThat(thread.getName()).as("a virtual thread's own name").isEmpty();
		assertThat(HostThreads.isVirtual(thread)).isTrue();
		assertThat(name).hasValue("virtual thread #" + id(thread));
		assertThat(described).hasValue("virtual thread #" + id(thread));
	}

	@Test
	void aNamedVirtualThreadIsNamedByItsName() throws Exception {
		Thread thread = VirtualThreads.start(() -> {
		});
		thread.setName("request-7");
		thread.join();
		assertThat(HostThreads.name(thread)).isEqualTo("request-7");
		assertThat(HostThreads.describe(thread)).isEqualTo("thread 'request-7'");
	}

	@SuppressWarnings("deprecation") // Thread.threadId() is Java 19+
	private static long id(Thread thread) {
		return thread.getId();
	}

}
