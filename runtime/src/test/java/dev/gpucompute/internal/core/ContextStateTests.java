package dev.gpucompute.internal.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatNoException;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

import dev.gpucompute.Backend;
import dev.gpucompute.ContextClosedException;
import dev.gpucompute.ContextMismatchException;
import dev.gpucompute.DeviceInfo;
import dev.gpucompute.Dim3;

/**
 * The context's lifecycle as the rooms share it: its phases, the work close waits for, and the
 * checks that keep one context's handles out of another.
 */
class ContextStateTests {

	private static DeviceInfo device(int ordinal) {
		return new DeviceInfo(Backend.CPU, ordinal, "CPU", "uuid-" + ordinal, "", "", 1, 1L << 30, "", 1024,
				new Dim3(1024, 1024, 64), new Dim3(Integer.MAX_VALUE, 65535, 65535), 48 * 1024, 32);
	}

	@Test
	void movesFromOpenThroughClosingToClosed() {
		ContextState state = new ContextState(7, device(0), null);
		assertThat(state.phase()).isEqualTo("open");
		assertThat(state.isOpen()).isTrue();
		assertThatNoException().isThrownBy(state::ensureOpen);
		state.closing();
		assertThat(state.phase()).isEqualTo("closing");
		assertThat(state.isOpen()).isFalse();
		assertThat(state.isClosed()).isFalse();
		assertThatThrownBy(state::ensureOpen).isInstanceOf(ContextClosedException.class).hasMessageContaining("#7");
		state.closed();
		assertThat(state.phase()).isEqualTo("closed");
		assertThat(state.isClosed()).isTrue();
	}

	@Test
	void closeWaitsForWorkBegunBeforeItAndRefusesWorkAfter() throws Exception {
		ContextState state = new ContextState(1, device(0), null);
		state.beginWork();
		state.closing();
		assertThatThrownBy(state::beginWork).isInstanceOf(ContextClosedException.class);
		// Still in flight: the wait ends at its deadline, unfinished.
		assertThat(state.awaitWork(System.nanoTime() + 20_000_000L)).isFalse();
		Thread ender = new Thread(state::endWork);
		ender.start();
		assertThat(state.awaitWork(System.nanoTime() + 10_000_000_000L)).isTrue();
		ender.join();
	}

	@Test
	void refusesAHandleOfAnotherContextNamingBoth() {
		ContextState mine = new ContextState(1, device(0), null);
		ContextState theirs = new ContextState(2, device(1), null);
		assertThatNoException().isThrownBy(() -> mine.ensureSame(mine, "Stream ", "s1"));
		assertThatThrownBy(() -> mine.ensureSame(theirs, "Stream ", "s1")).isInstanceOf(ContextMismatchException.class)
			.hasMessageContaining("Stream s1 belongs to another GPU context (#2, CPU device 1)")
			.hasMessageContaining("context #1 (CPU device 0)");
		// From the moment it starts closing (its drain may take the whole drain timeout), not only once closed.
		theirs.closing();
		assertThatThrownBy(() -> mine.ensureSame(theirs, "Stream ", "s1")).isInstanceOf(ContextClosedException.class)
			.hasMessageContaining("#2, which is closed");
		theirs.closed();
		assertThatThrownBy(() -> mine.ensureSame(theirs, "Stream ", "s1")).isInstanceOf(ContextClosedException.class)
			.hasMessageContaining("#2, which is closed");
	}

	@Test
	void acceptsAPeerOfTheSameGroupOnlyWhileItIsOpen() {
		Object group = new Object();
		ContextState mine = new ContextState(1, device(0), null);
		ContextState peer = new ContextState(2, device(1), null);
		ContextState stranger = new ContextState(3, device(2), null);
		mine.joinGroup(group);
		peer.joinGroup(group);
		stranger.joinGroup(new Object());
		assertThatNoException().isThrownBy(() -> mine.ensureSameOrPeer(peer, "Event "));
		assertThatThrownBy(() -> mine.ensureSameOrPeer(stranger, "Event ")).isInstanceOf(ContextMismatchException.class);
		peer.closing();
		assertThatThrownBy(() -> mine.ensureSameOrPeer(peer, "Event ")).isInstanceOf(ContextClosedException.class);
	}

}
