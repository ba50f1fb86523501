package dev.gpucompute;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import java.time.Duration;
import java.util.List;

import org.junit.jupiter.api.Test;

import dev.gpucompute.internal.core.Arguments;

/**
 * The API's argument checks ({@code Checks}, package-private: the API depends on no implementation)
 * and the implementation's ({@link Arguments}: the rooms cannot reach package-private API) are two
 * copies of one rule; this keeps them saying the same about the same bad input.
 */
class ArgumentChecksTest {

	@Test
	void durationsAreCheckedAlike() {
		for (Duration value : List.of(Duration.ofNanos(-1), Duration.ofSeconds(Long.MAX_VALUE), Duration.ZERO,
				Duration.ofSeconds(5))) {
			Throwable api = catchThrowable(() -> Checks.nanos(value, "timeout"));
			Throwable rooms = catchThrowable(() -> Arguments.nanos(value, "timeout"));
			assertSame(api, rooms);
			if (api == null) {
				assertThat(Arguments.nanos(value, "timeout")).isEqualTo(Checks.nanos(value, "timeout"));
			}
		}
		assertSame(catchThrowable(() -> Checks.nanos(null, "timeout")), catchThrowable(() -> Arguments.nanos(null, "timeout")));
		assertThat(Arguments.MAX_DURATION).isEqualTo(Checks.MAX_DURATION);
	}

	@Test
	void rangesAreCheckedAlike() {
		for (int value : new int[] { -1, 0, 1, 8, 9 }) {
			assertSame(catchThrowable(() -> Checks.within(value, 0, 8, "size")),
					catchThrowable(() -> Arguments.within(value, 0, 8, "size")));
		}
	}

	private static void assertSame(Throwable api, Throwable rooms) {
		if (api == null) {
			assertThat(rooms).isNull();
			return;
		}
		assertThat(rooms).isNotNull().hasSameClassAs(api).hasMessage(api.getMessage());
	}

}
