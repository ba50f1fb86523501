package dev.gpucompute.spi;

import java.util.List;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** Tests for {@link Suggestions}: "did you mean" for the runtime's and the starter's reports. */
class SuggestionsTests {

	@Test
	void distanceCountsInsertionsDeletionsAndSubstitutions() {
		assertThat(Suggestions.distance("kernels", "kernels")).isZero();
		assertThat(Suggestions.distance("kernal", "kernel")).isEqualTo(1);
		assertThat(Suggestions.distance("sidcar", "sidecar")).isEqualTo(1);
		assertThat(Suggestions.distance("", "abc")).isEqualTo(3);
		assertThat(Suggestions.distance("kitten", "sitting")).isEqualTo(3);
	}

	@Test
	void nearestIsAKnownNameWithinTypoDistance() {
		List<String> known = List.of("gpu.streams.pool-size", "gpu.streams.max-size", "gpu.kernels.locations");
		assertThat(Suggestions.nearest("gpu.streams.pool-sise", known)).isEqualTo("gpu.streams.pool-size");
		assertThat(Suggestions.nearest("gpu.kernels.location", known)).isEqualTo("gpu.kernels.locations");
	}

	@Test
	void aKeyInTheWrongGroupIsFoundByItsLastSegment() {
		List<String> known = List.of("gpu.streams.pool-size", "gpu.kernels.locations");
		assertThat(Suggestions.nearest("gpu.pool.pool-size", known)).isEqualTo("gpu.streams.pool-size");
	}

	@Test
	void nothingIsSuggestedForANameFarFromAllAndAmbiguousKeys() {
		assertThat(Suggestions.nearest("spring.datasource.url", List.of("gpu.streams.pool-size"))).isNull();
		assertThat(Suggestions.nearest("x.size", List.of("gpu.streams.max-size", "gpu.copies.size", "gpu.a.size")))
			.isNull();
		assertThat(Suggestions.nearest("anything", List.of())).isNull();
	}

	@Test
	void closestListsTheNearestCandidatesFirstAndTiesInNaturalOrder() {
		List<String> candidates = List.of("kernels-b", "shaders", "kernels-a", "kernel", "models", "ptx");
		assertThat(Suggestions.closest("kernels", candidates, (name) -> name, 3)).containsExactly("kernel", "kernels-a",
				"kernels-b");
		assertThat(Suggestions.closest("x", List.of("dir/kernels"), (path) -> path.substring(4), 5))
			.containsExactly("dir/kernels");
	}

	@Test
	void aCandidateIsLikelyMeantWithinTwoEdits() {
		assertThat(Suggestions.isLikelyMeant("kernals", "kernels")).isTrue();
		assertThat(Suggestions.isLikelyMeant("krnls", "kernels")).isTrue();
		assertThat(Suggestions.isLikelyMeant("knls", "kernels")).isFalse();
	}

}
