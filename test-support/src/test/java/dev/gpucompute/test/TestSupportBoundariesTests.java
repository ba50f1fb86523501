package dev.gpucompute.test;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import org.junit.jupiter.api.Test;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * The test support's package boundaries (docs/architecture.md), checked on its main classes: it uses the
 * runtime only through the runtime's exported packages ({@code dev.gpucompute},
 * {@code dev.gpucompute.spi}, {@code dev.gpucompute.kernels}, {@code dev.gpucompute.expression}), never its rooms
 * ({@code dev.gpucompute.internal}) or a backend ({@code cpu}, {@code cuda}), and its own
 * packages depend on each other in no circle.
 */
class TestSupportBoundariesTests {

	private final JavaClasses classes = new ClassFileImporter()
		.withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
		.importPackages("dev.gpucompute.test");

	@Test
	void usesOnlyTheRuntimesExportedPackages() {
		// Without this, a wrong import location would check nothing and pass.
		assertThat(this.classes).as("main classes of dev.gpucompute.test").isNotEmpty();
		noClasses().should()
			.dependOnClassesThat()
			.resideInAnyPackage("dev.gpucompute.internal..", "dev.gpucompute.cpu..", "dev.gpucompute.cuda..")
			.because("the runtime's rooms and backends are not its API; they change without notice")
			.check(this.classes);
	}

	@Test
	void noPackageCycles() {
		slices().matching("dev.gpucompute.(**)").should().beFreeOfCycles().check(this.classes);
	}

}
