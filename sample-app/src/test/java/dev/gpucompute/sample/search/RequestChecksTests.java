package dev.gpucompute.sample.search;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import org.assertj.core.api.ThrowableAssert.ThrowingCallable;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

/**
 * The store's input checks on their own, without a store, a device or a disk: which input is
 * refused, as which problem (status, type, field) and with which detail, and that input at the
 * limits passes.
 */
class RequestChecksTests {

	/** Dimensions up to 8, 3 queries, ids of 70,000 characters, 10 hits. */
	private final RequestChecks checks = new RequestChecks(new CollectionStore.Limits(8, 3, 70_000, 10));

	private static ServiceProblem refused(ThrowingCallable check) {
		ServiceProblem problem = catchThrowableOfType(ServiceProblem.class, check);
		assertThat(problem).as("refused with a ServiceProblem").isNotNull();
		return problem;
	}

	private static void assertInvalid(ThrowingCallable check, String field, String detail) {
		ServiceProblem problem = refused(check);
		assertThat(problem.status()).isEqualTo(400);
		assertThat(problem.type()).isEqualTo("invalid-request");
		assertThat(problem.properties()).containsEntry("field", field);
		assertThat(problem.detail()).isEqualTo(detail);
	}

	@Test
	void createNeedsANameOfUpTo64SafeCharactersAndADimensionWithinTheLimit() {
		assertThatCode(() -> this.checks.checkCreate("a_B-9".repeat(12) + "abcd", 8)).doesNotThrowAnyException();
		assertInvalid(() -> this.checks.checkCreate("x".repeat(65), 1), "name",
				"A collection name is 1 to 64 letters, digits, '_' or '-', got '" + "x".repeat(65) + "'");
		assertInvalid(() -> this.checks.checkCreate("a.b", 1), "name",
				"A collection name is 1 to 64 letters, digits, '_' or '-', got 'a.b'");
		assertInvalid(() -> this.checks.checkCreate(null, 1), "name",
				"A collection name is 1 to 64 letters, digits, '_' or '-', got 'null'");
		assertInvalid(() -> this.checks.checkCreate("c", null), "dimension", "dimension is required");
		assertInvalid(() -> this.checks.checkCreate("c", 0), "dimension",
				"dimension must be between 1 and 8 (sample.limits.max-dimension), got 0");
		assertInvalid(() -> this.checks.checkCreate("c", 9), "dimension",
				"dimension must be between 1 and 8 (sample.limits.max-dimension), got 9");
	}

	@Test
	void idsMustBePresentShortUniqueAndFreeOfCommasAndControlCharacters() {
		assertInvalid(() -> this.checks.checkIds(List.of(), 2), "ids", "At least one id is required");
		assertInvalid(() -> this.checks.checkIds(null, 2), "ids", "At least one id is required");
		assertInvalid(() -> this.checks.checkIds(Arrays.asList("a", null), 2), "ids[1]", "ids[1] is empty");
		assertInvalid(() -> this.checks.checkIds(List.of("a", ""), 2), "ids[1]", "ids[1] is empty");
		assertInvalid(() -> this.checks.checkIds(List.of("a,b"), 2), "ids[0]",
				"ids[0] contains a comma or control character");
		assertInvalid(() -> this.checks.checkIds(List.of("a\nb"), 2), "ids[0]",
				"ids[0] contains a comma or control character");
		assertInvalid(() -> this.checks.checkIds(List.of("a", "b", "a"), 2), "ids[2]",
				"id 'a' occurs more than once in the request");
		assertInvalid(() -> this.checks.checkIds(List.of("x".repeat(70_001)), 2), "ids[0]",
				"ids[0] is longer than 70000 characters (sample.limits.max-id-length)");
	}

	@Test
	void anIdMustFitTheLogsSixteenBitLengthInUtf8() {
		assertThatCode(() -> this.checks.checkIds(List.of("x".repeat(65_535)), 2)).doesNotThrowAnyException();
		// 21,845 three-byte characters are 65,535 bytes; one more two-byte character is too many.
		assertThatCode(() -> this.checks.checkIds(List.of("\u20ac".repeat(21_845)), 2)).doesNotThrowAnyException();
		assertInvalid(() -> this.checks.checkIds(List.of("\u20ac".repeat(21_845) + "\u00e9"), 2), "ids[0]",
				"ids[0] is 65537 bytes long in UTF-8, more than the 65535 an id may have");
		// A surrogate pair is 4 bytes: 16,383 pairs are 65,532 bytes, two more ASCII characters fit, four do not.
		String pairs = "\uD83D\uDE00".repeat(16_383);
		assertThatCode(() -> this.checks.checkIds(List.of(pairs + "ab"), 2)).doesNotThrowAnyException();
		assertInvalid(() -> this.checks.checkIds(List.of(pairs + "abcd"), 2), "ids[0]",
				"ids[0] is 65536 bytes long in UTF-8, more than the 65535 an id may have");
	}

	@Test
	void aWriteMustFitOneLogRecord() {
		// 6,000 rows of dimension 100,000 are 2.4 GB of values: more than one record may hold.
		List<String> ids = new ArrayList<>();
		for (int i = 0; i < 6_000; i++) {
			ids.add("r" + i);
		}
		ServiceProblem problem = refused(() -> this.checks.checkIds(ids, 100_000));
		assertThat(problem.properties()).containsEntry("field", "ids");
		assertThat(problem.detail()).startsWith("A write of 6000 vectors of dimension 100000 with these ids needs a log "
				+ "record of 2400040")
			.endsWith("bytes, more than the 2147483583 one write may have; split it into smaller writes");
		assertThatCode(() -> this.checks.checkIds(ids.subList(0, 5_000), 100_000)).doesNotThrowAnyException();
	}

	@Test
	void aWriteHasOneRowOfTheCollectionsDimensionPerIdWithValidValues() {
		assertThatCode(() -> this.checks.checkWrite("c", 2, Metric.DOT, List.of("a", "b"), new float[] { 1, 2, 3, 4 }))
			.doesNotThrowAnyException();
		ServiceProblem wrong = refused(
				() -> this.checks.checkWrite("c", 2, Metric.DOT, List.of("a", "b"), new float[] { 1, 2, 3 }));
		assertThat(wrong.type()).isEqualTo("wrong-dimension");
		assertThat(wrong.detail())
			.isEqualTo("vectors has 3 values, but collection 'c' holds vectors of dimension 2");
		assertInvalid(() -> this.checks.checkWrite("c", 2, Metric.DOT, List.of("a", "b"), new float[] { 1, 2 }), "ids",
				"2 ids were given for 1 vectors");
		assertThat(refused(() -> this.checks.checkWrite("c", 2, Metric.DOT, List.of("a"), new float[] { 1, Float.NaN }))
			.type()).isEqualTo("non-finite-value");
		assertInvalid(() -> this.checks.checkWrite("c", 2, Metric.COSINE, List.of("a"), new float[] { 0, 0 }),
				"vectors[0]", "vectors[0] is the zero vector, which has no cosine similarity with anything");
		// The ids are checked before the rows.
		assertInvalid(() -> this.checks.checkWrite("c", 2, Metric.DOT, List.of("a", "a"), new float[] { 1 }), "ids[1]",
				"id 'a' occurs more than once in the request");
	}

	@Test
	void aSearchHasWholeQueriesAtLeastOneAndAtMostTheLimit() {
		assertThat(this.checks.checkQueries("c", 2, Metric.DOT, new float[] { 1, 2, 3, 4, 5, 6 })).isEqualTo(3);
		assertThat(refused(() -> this.checks.checkQueries("c", 2, Metric.DOT, new float[] { 1, 2, 3 })).type())
			.isEqualTo("wrong-dimension");
		assertInvalid(() -> this.checks.checkQueries("c", 2, Metric.DOT, new float[0]), "vectors",
				"At least one query vector is required");
		assertInvalid(() -> this.checks.checkQueries("c", 1, Metric.DOT, new float[] { 1, 2, 3, 4 }), "vectors",
				"4 queries exceed the limit of 3 per request (sample.limits.max-queries)");
		assertInvalid(() -> this.checks.checkQueries("c", 1, Metric.COSINE, new float[] { 0 }), "vectors[0]",
				"vectors[0] is the zero vector, which has no cosine similarity with anything");
	}

	@Test
	void kIsWithinTheCollectionsSizeAndTheHitsWithinTheLimit() {
		assertThatCode(() -> this.checks.checkResults("c", 2, 5, 5)).doesNotThrowAnyException();
		ServiceProblem zero = refused(() -> this.checks.checkResults("c", 1, 0, 5));
		assertThat(zero.type()).isEqualTo("k-out-of-range");
		assertThat(refused(() -> this.checks.checkResults("c", 1, 6, 5)).detail())
			.isEqualTo("k must be between 1 and the collection's size (5), got 6");
		ServiceProblem many = refused(() -> this.checks.checkResults("c", 3, 4, 5));
		assertThat(many.type()).isEqualTo("too-many-results");
		assertThat(many.detail()).isEqualTo("3 queries with k = 4 would return 12 hits, more than the limit of 10 per "
				+ "request (sample.limits.max-results)");
	}

}
