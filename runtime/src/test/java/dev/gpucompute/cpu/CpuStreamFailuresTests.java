package dev.gpucompute.cpu;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.function.LongPredicate;

import org.junit.jupiter.api.Test;

import dev.gpucompute.GpuException;

/**
 * The failure ledger of a CPU stream on its own: which failures a claim takes, how they are
 * reported (once, the first with the rest suppressed), and what a discard drops.
 */
class CpuStreamFailuresTests {

	private static final LongPredicate NO_WAIT = (seq) -> false;

	private final CpuStreamFailures ledger = new CpuStreamFailures();

	private static GpuException error(String message) {
		return new GpuException(message);
	}

	@Test
	void aClaimTakesTheFailuresInItsRangeOnceTheFirstWithTheRestSuppressed() {
		GpuException second = error("op 2");
		GpuException third = error("op 3");
		GpuException fifth = error("op 5");
		assertThat(this.ledger.keep(2, second, NO_WAIT)).isTrue();
		assertThat(this.ledger.keep(3, third, NO_WAIT)).isTrue();
		assertThat(this.ledger.keep(5, fifth, NO_WAIT)).isTrue();
		assertThat(this.ledger.claim(2, 4)).as("(2, 4] holds only op 3").isSameAs(third);
		assertThat(third.getSuppressed()).isEmpty();
		assertThat(this.ledger.claim(0, 10)).isSameAs(second);
		assertThat(second.getSuppressed()).containsExactly(fifth);
		assertThat(this.ledger.claim(0, 10)).as("reported once").isNull();
	}

	@Test
	void aReportCarriesAtMostEightSuppressed() {
		GpuException first = error("op 1");
		this.ledger.keep(1, first, NO_WAIT);
		for (int seq = 2; seq <= 20; seq++) {
			this.ledger.keep(seq, error("op " + seq), NO_WAIT);
		}
		GpuException report = this.ledger.claim(0, 20);
		assertThat(report).isSameAs(first);
		assertThat(report.getSuppressed()).hasSize(CpuStreamFailures.MAX_SUPPRESSED);
		assertThat(report.getSuppressed()[0].getMessage()).isEqualTo("op 2");
		assertThat(report.getSuppressed()[7].getMessage()).isEqualTo("op 9");
		assertThat(this.ledger.claim(0, 20)).as("the ones left out are taken all the same").isNull();
	}

	@Test
	void theSameErrorTwiceIsNotSuppressedInItself() {
		GpuException shared = error("one error for two operations");
		GpuException other = error("op 3");
		this.ledger.keep(1, shared, NO_WAIT);
		this.ledger.keep(2, shared, NO_WAIT);
		this.ledger.keep(3, other, NO_WAIT);
		assertThat(this.ledger.claim(0, 3)).isSameAs(shared);
		assertThat(shared.getSuppressed()).containsExactly(other);
	}

	@Test
	void aFailureBeforeTheBoundaryIsKeptOnlyWhenAWaitCoversIt() {
		assertThat(this.ledger.discardThrough(5, NO_WAIT)).isNull();
		assertThat(this.ledger.boundary()).isEqualTo(5);
		assertThat(this.ledger.keep(4, error("orphan"), NO_WAIT)).as("its holder left without waiting").isFalse();
		assertThat(this.ledger.claim(0, 10)).isNull();
		GpuException covered = error("covered");
		assertThat(this.ledger.keep(4, covered, (seq) -> seq == 4)).isTrue();
		assertThat(this.ledger.keep(6, error("after"), NO_WAIT)).as("after the boundary: the next holder's").isTrue();
		assertThat(this.ledger.claim(0, 5)).isSameAs(covered);
	}

	@Test
	void aDiscardDropsTheUncoveredFailuresUpToItAndReturnsThemInOrder() {
		GpuException first = error("op 1");
		GpuException second = error("op 2");
		GpuException third = error("op 3");
		GpuException fifth = error("op 5");
		this.ledger.keep(1, first, NO_WAIT);
		this.ledger.keep(2, second, NO_WAIT);
		this.ledger.keep(3, third, NO_WAIT);
		this.ledger.keep(5, fifth, NO_WAIT);
		List<GpuException> dropped = this.ledger.discardThrough(4, (seq) -> seq == 2);
		assertThat(dropped).containsExactly(first, third);
		assertThat(this.ledger.boundary()).isEqualTo(4);
		assertThat(this.ledger.claim(0, 10)).as("op 2 (covered) and op 5 (after the boundary) stay").isSameAs(second);
		assertThat(second.getSuppressed()).containsExactly(fifth);
	}

}
