package dev.gpucompute.benchmarks;

import java.util.List;
import java.util.Set;
import java.util.TreeSet;

import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import org.jspecify.annotations.NullMarked;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Every main package of the benchmarks declares its nullness with JSpecify's {@link NullMarked} on its
 * {@code package-info}, as the runtime's do: NullAway (in the build) checks only such packages, so a
 * new package without it would silently go unchecked.
 */
class NullMarkedPackagesTests {

	@Test
	void everyMainPackageIsNullMarked() {
		Set<String> packages = new TreeSet<>();
		for (JavaClass type : new ClassFileImporter().withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
			.importPackages("dev.gpucompute.benchmarks")) {
			packages.add(type.getPackageName());
		}
		// JMH's annotation processor writes its harness there: generated, with no package-info of ours.
		packages.remove("dev.gpucompute.benchmarks.jmh_generated");
		// Without this, a wrong import location would check nothing and pass.
		assertThat(packages).contains("dev.gpucompute.benchmarks");
		List<String> unmarked = packages.stream().filter((name) -> !nullMarked(name)).toList();
		assertThat(unmarked).as("main packages without @NullMarked on their package-info").isEmpty();
	}

	private static boolean nullMarked(String packageName) {
		try {
			return Class.forName(packageName + ".package-info").isAnnotationPresent(NullMarked.class);
		}
		catch (ClassNotFoundException ex) {
			return false;
		}
	}

}
