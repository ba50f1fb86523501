package dev.gpucompute.sample;

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
 * Every main package of the sample declares its nullness with JSpecify's {@link NullMarked} on its
 * {@code package-info}, as the starter's do: NullAway (in the build) checks only such packages, so a
 * new package without it would silently go unchecked.
 */
class NullMarkedPackagesTests {

	@Test
	void everyMainPackageIsNullMarked() {
		Set<String> packages = new TreeSet<>();
		for (JavaClass type : new ClassFileImporter().withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
			.importPackages("dev.gpucompute.sample")) {
			packages.add(type.getPackageName());
		}
		// Without this, a wrong import location would check nothing and pass.
		assertThat(packages).contains("dev.gpucompute.sample", "dev.gpucompute.sample.demo",
				"dev.gpucompute.sample.search", "dev.gpucompute.sample.storage", "dev.gpucompute.sample.web");
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
