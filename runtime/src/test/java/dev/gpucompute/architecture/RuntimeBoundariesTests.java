package dev.gpucompute.architecture;

import java.util.List;

import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import com.tngtech.archunit.library.dependencies.SliceAssignment;
import com.tngtech.archunit.library.dependencies.SliceIdentifier;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import static com.tngtech.archunit.base.DescribedPredicate.not;
import static com.tngtech.archunit.core.domain.JavaClass.Predicates.resideInAPackage;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.classes;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * The runtime's package boundaries (docs/architecture.md), checked on its main classes: the API
 * package ({@code dev.gpucompute}) depends on no implementation and holds public types only, its
 * concept packages sit on one side of it ({@code settings} and {@code listener} below it, depending on
 * nothing of gpu-compute; {@code batch} and {@code graph} above it, which the API never names), the
 * SPI and the kernel files package depend on nothing but the API, the backends on neither each other
 * nor the rooms, and no two packages depend on each other in a circle.
 */
class RuntimeBoundariesTests {

	private static final String API = "dev.gpucompute";

	private static JavaClasses runtime;

	@BeforeAll
	static void importRuntime() {
		runtime = new ClassFileImporter().withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
			.importPackages(API);
		// Without this, a wrong import location would check nothing and pass.
		assertThat(runtime.stream().map(JavaClass::getPackageName).distinct()).contains(API, API + ".batch",
				API + ".listener", API + ".settings", "dev.gpucompute.spi",
				"dev.gpucompute.kernels", "dev.gpucompute.cpu", "dev.gpucompute.cuda", "dev.gpucompute.internal.context",
				"dev.gpucompute.internal.pool", "dev.gpucompute.internal.memory", "dev.gpucompute.expression",
				"dev.gpucompute.internal.expression", "dev.gpucompute.graph", "dev.gpucompute.internal.graph");
	}

	@Test
	void noPackageCycles() {
		slices().assignedFrom(eachPackageUnder(API)).should().beFreeOfCycles().check(runtime);
	}

	@Test
	void theApiDependsOnNoImplementation() {
		noClasses().that()
			.resideInAPackage(API)
			.should()
			.dependOnClassesThat()
			.resideInAnyPackage(API + ".internal..", API + ".cpu..", API + ".cuda..")
			.because("applications compile against the API alone; it reaches the implementation's entry points "
					+ "by name")
			.check(runtime);
	}

	@Test
	void theApiPackageHoldsPublicTypesOnly() {
		classes().that()
			.resideInAPackage(API)
			.and()
			.areTopLevelClasses()
			.and()
			.doNotHaveSimpleName("package-info")
			.should()
			.bePublic()
			.because("what applications write code against is all it holds; machinery lives elsewhere")
			.check(runtime);
	}

	@Test
	void settingsAndListenerPayloadsDependOnNothingElseOfGpuCompute() {
		for (String leaf : List.of(API + ".settings", API + ".listener")) {
			noClasses().that()
				.resideInAPackage(leaf)
				.should()
				.dependOnClassesThat(resideInAPackage(API + "..").and(not(resideInAPackage(leaf))))
				.because("the API's builder uses them, so they must not use the API back")
				.check(runtime);
		}
	}

	@Test
	void theBatcherBuildsOnTheApiWhichNeverNamesIt() {
		noClasses().that()
			.resideInAPackage(API + ".batch")
			.should()
			.dependOnClassesThat()
			.resideInAnyPackage(API + ".internal..", API + ".cpu..", API + ".cuda..", API + ".spi..", API + ".kernels..")
			.because("batching is built on the API (leases, stream scopes) and reaches the runtime only by name")
			.check(runtime);
		noClasses().that()
			.resideInAnyPackage(API, API + ".settings", API + ".listener", API + ".spi..", API + ".kernels..")
			.should()
			.dependOnClassesThat()
			.resideInAPackage(API + ".batch")
			.because("a first-time user's API does not need the batcher")
			.check(runtime);
	}

	@Test
	void theGraphApiIsAConceptPackageOnTopOfTheApi() {
		noClasses().that()
			.resideInAPackage(API + ".graph..")
			.should()
			.dependOnClassesThat()
			.resideInAnyPackage(API + ".internal..", API + ".cpu..", API + ".cuda..", API + ".spi..", API + ".kernels..")
			.because("graphs are public API: applications import them beside dev.gpucompute")
			.check(runtime);
		noClasses().that()
			.resideInAPackage(API)
			.should()
			.dependOnClassesThat()
			.resideInAPackage(API + ".graph..")
			.because("the core API knows nothing of graphs, so the concept package can grow without a cycle")
			.check(runtime);
	}

	@Test
	void theSpiAndKernelFilesDependOnlyOnTheApi() {
		noClasses().that()
			.resideInAnyPackage(API + ".spi..", API + ".kernels..")
			.should()
			.dependOnClassesThat()
			.resideInAnyPackage(API + ".internal..", API + ".cpu..", API + ".cuda..")
			.because("backends and tools build on these exported packages")
			.check(runtime);
	}

	@Test
	void expressionKernelsUseOnlyTheApiAndTheirCompiler() {
		noClasses().that()
			.resideInAPackage(API + ".expression..")
			.should()
			.dependOnClassesThat()
			.resideInAnyPackage(API + ".spi..", API + ".kernels..", API + ".cpu..", API + ".cuda..", API + ".internal.core..",
					API + ".internal.stream..", API + ".internal.pool..", API + ".internal.memory..", API + ".internal.launch..",
					API + ".internal.batch..", API + ".internal.context..")
			.because("an expression kernel is an ordinary KernelSource: its builders reach nothing but the API and the "
					+ "expression compiler")
			.check(runtime);
		noClasses().that()
			.resideInAPackage(API + ".internal.expression..")
			.should()
			.dependOnClassesThat()
			.resideInAnyPackage(API + ".expression..", API + ".spi..", API + ".kernels..", API + ".cpu..", API + ".cuda..",
					API + ".internal.core..", API + ".internal.stream..", API + ".internal.pool..", API + ".internal.memory..",
					API + ".internal.launch..", API + ".internal.batch..", API + ".internal.context..")
			.because("the expression compiler turns text into code and knows no room, backend or builder")
			.check(runtime);
	}

	@Test
	void theBackendsDependOnNeitherEachOtherNorTheRooms() {
		noClasses().that()
			.resideInAPackage(API + ".cpu..")
			.should()
			.dependOnClassesThat()
			.resideInAnyPackage(API + ".cuda..", API + ".internal..")
			.check(runtime);
		noClasses().that()
			.resideInAPackage(API + ".cuda..")
			.should()
			.dependOnClassesThat()
			.resideInAnyPackage(API + ".cpu..", API + ".internal..")
			.check(runtime);
	}

	@Test
	void theRoomsReachBackendsOnlyThroughTheSpi() {
		noClasses().that()
			.resideInAPackage(API + ".internal..")
			.should()
			.dependOnClassesThat()
			.resideInAnyPackage(API + ".cpu..", API + ".cuda..")
			.check(runtime);
	}

	/** Each package its own slice, so that a cycle between any two packages under {@code root} shows. */
	static SliceAssignment eachPackageUnder(String root) {
		return new SliceAssignment() {

			@Override
			public SliceIdentifier getIdentifierOf(JavaClass javaClass) {
				String name = javaClass.getPackageName();
				return (name.equals(root) || name.startsWith(root + ".")) ? SliceIdentifier.of(name)
						: SliceIdentifier.ignore();
			}

			@Override
			public String getDescription() {
				return "the packages under " + root;
			}

		};
	}

}
