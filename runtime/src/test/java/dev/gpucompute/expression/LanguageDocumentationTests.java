package dev.gpucompute.expression;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

import org.junit.jupiter.api.Test;

import dev.gpucompute.internal.expression.Functions;

/** docs/guide.md's table of the language's functions is the language's: every function, and each bound as stated. */
class LanguageDocumentationTests {

	@Test
	void theGuideListsEveryFunctionWithTheUlpsTheKernelsState() throws IOException {
		String guide = Files.readString(Path.of("..", "docs", "guide.md"));
		String language = guide.substring(guide.indexOf("### The language"), guide.indexOf("## Writing a kernel's CPU body"));
		for (String function : Functions.names()) {
			assertThat(language).as("the guide's language section").contains("`" + function + "`");
		}
		for (Map.Entry<String, int[]> inexact : Functions.inexact().entrySet()) {
			assertThat(language).contains("`" + inexact.getKey() + "` " + inexact.getValue()[0] + " / " + inexact.getValue()[1]);
		}
	}

}
