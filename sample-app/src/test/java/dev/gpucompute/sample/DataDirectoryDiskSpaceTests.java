package dev.gpucompute.sample;

import java.io.File;
import java.util.Map;

import org.junit.jupiter.api.Test;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.core.env.MapPropertySource;
import org.springframework.core.env.StandardEnvironment;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Boot's {@code diskSpace} component watches {@code sample.data-dir} unless the user points it
 * elsewhere: {@link DataDirectoryDiskSpace} adds the default as the last property source. (That
 * the running service shows the data directory is checked by {@code StorageFaultsAppTests}.)
 */
class DataDirectoryDiskSpaceTests {

	@Test
	void theDiskSpaceComponentWatchesTheDataDirectory() {
		assertThat(diskSpacePath(Map.of("sample.data-dir", "/srv/vectors"))).isEqualTo(new File("/srv/vectors"));
	}

	@Test
	void withoutADataDirectoryItWatchesTheServicesDefault() {
		assertThat(diskSpacePath(Map.of())).isEqualTo(new File("data"));
	}

	@Test
	void anExplicitSettingWins() {
		assertThat(diskSpacePath(Map.of("sample.data-dir", "/srv/vectors", "management.health.diskspace.path", "/var")))
			.isEqualTo(new File("/var"));
	}

	@Test
	void aDefaultPropertyOfTheApplicationWinsToo() {
		StandardEnvironment environment = new StandardEnvironment();
		environment.getPropertySources()
			.addLast(new MapPropertySource("defaultProperties", Map.of("management.health.diskspace.path", "/opt")));
		new DataDirectoryDiskSpace().postProcessEnvironment(environment, new SpringApplication());
		assertThat(Binder.get(environment).bind("management.health.diskspace.path", File.class).get())
			.isEqualTo(new File("/opt"));
	}

	private static File diskSpacePath(Map<String, Object> settings) {
		StandardEnvironment environment = new StandardEnvironment();
		environment.getPropertySources().addFirst(new MapPropertySource("settings", settings));
		new DataDirectoryDiskSpace().postProcessEnvironment(environment, new SpringApplication());
		new DataDirectoryDiskSpace().postProcessEnvironment(environment, new SpringApplication());
		assertThat(environment.getPropertySources().stream()
			.filter((source) -> source.getName().equals(DataDirectoryDiskSpace.SOURCE))
			.count()).as("added once").isEqualTo(1);
		return Binder.get(environment).bind("management.health.diskspace.path", File.class).get();
	}

}
