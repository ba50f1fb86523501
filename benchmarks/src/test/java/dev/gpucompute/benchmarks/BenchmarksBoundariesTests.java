package dev.gpucompute.benchmarks;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import org.junit.jupiter.api.Test;

import static com.tngtech.archunit.base.DescribedPredicate.not;
import static com.tngtech.archunit.core.domain.JavaClass.Predicates.resideInAPackage;
import static com.tngtech.archunit.core.domain.JavaClass.Predicates.resideInAnyPackage;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * The benchmarks's package boundaries (docs/architecture.md), checked on its main classes: it uses the
 * runtime only through the runtime's exported packages ({@code dev.gpucompute},
 * {@code .batch}, {@code .listener}, {@code .settings}, {@code .graph}, {@code .expression}, {@code .spi},
 * {@code .kernels}), never its rooms
 * ({@code dev.gpucompute.internal}) or a backend ({@code cpu}, {@code cuda}), and its own
 * packages depend on each other in no circle.
 */
class BenchmarksBoundariesTests {

	/** The runtime's exported packages (docs/architecture.md): all of the runtime this module may use. */
	private static final String[] RUNTIME_API = { "dev.gpucompute", "dev.gpucompute.batch", "dev.gpucompute.listener",
			"dev.gpucompute.settings", "dev.gpucompute.graph", "dev.gpucompute.expression", "dev.gpucompute.spi",
			"dev.gpucompute.kernels" };

	private final JavaClasses classes = new ClassFileImporter()
		.withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
		.importPackages("dev.gpucompute.benchmarks");

	@Test
	void usesOnlyTheRuntimesExportedPackages() {
		// Without this, a wrong import location would check nothing and pass.
		assertThat(this.classes).as("main classes of dev.gpucompute.benchmarks").isNotEmpty();
		noClasses().should()
			.dependOnClassesThat(resideInAPackage("dev.gpucompute..").and(not(resideInAnyPackage(RUNTIME_API)))
				.and(not(resideInAPackage("dev.gpucompute.benchmarks..")))
				// The starter's auto-configuration is a module of its own, with its own API.
				.and(not(resideInAPackage("dev.gpucompute.autoconfigure.."))))
			.because("only the runtime's exported packages are its API; its rooms and backends change without notice")
			.check(this.classes);
	}

	@Test
	void noPackageCycles() {
		slices().matching("dev.gpucompute.(**)").should().beFreeOfCycles().check(this.classes);
	}

}
