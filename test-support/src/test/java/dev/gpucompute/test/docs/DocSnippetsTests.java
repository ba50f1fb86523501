package dev.gpucompute.test.docs;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;

import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.api.io.TempDir;

/**
 * Every Java snippet of README.md and docs/ (the guide has its own check, {@code GuideTests}) compiles
 * against today's API as the page shows it, with the imports it shows: a newcomer who copies one needs
 * nothing the page does not name. Deprecated API fails the compilation ({@code -Xlint:deprecation
 * -Werror}).
 *
 * <p>A snippet is a whole compilation unit (a class, with its imports), members of a class (a
 * {@code @Bean} method, a {@code @Test} method), or statements. Members and statements are compiled
 * inside a class, and the variables and methods they take as given are declared by the snippet itself
 * in a comment right after its imports, {@code // Given: GpuContext context; float[] values}
 * (declarations separated by {@code ;}, continued on following {@code //} lines); their types must be
 * imported like everything else. The application's own types the pages assume ({@code Hit},
 * {@code Index}, and the guide's {@code Blur}) are stubbed here.
 *
 * <p>The migration notes show code of an earlier version next to today's: a snippet whose first line
 * is {@code // before} is that old code, which no longer compiles, and is skipped; the code that
 * replaces it is compiled like every other snippet.
 */
class DocSnippetsTests {

	private static final Path ROOT = Path.of("..");

	private static final List<String> PAGES = List.of("README.md", "docs/runtime.md", "docs/spring.md",
			"docs/observability.md", "docs/sample-app.md", "docs/migration-0.2.md", "docs/migration-0.3.md");

	/** The first line of a snippet that shows an earlier version's code (migration notes). */
	private static final String BEFORE = "// before";

	/** A fenced Java block, at any indentation (a block inside a list item is indented). */
	private static final Pattern BLOCK = Pattern.compile("(?m)^([ \\t]*)```java\\n(.*?)\\n\\1```[ \\t]*$",
			Pattern.DOTALL);

	private static final Pattern TYPE = Pattern.compile(
			"(?m)^(?:@[\\w.]+(?:\\([^)]*\\))?\\s*\\n)*(public\\s+)?(?:final\\s+|abstract\\s+)*(class|record|interface|enum)\\s+(\\w+)");

	private static final Pattern METHOD = Pattern
		.compile("^[\\w<>\\[\\], .?]+\\s+\\w+\\s*\\([^;=]*\\)\\s*(throws\\s+[\\w., ]+)?\\s*\\{\\s*$");

	/** The application's own types that snippets assume, as the pages describe them. */
	private static final Map<String, String> APPLICATION_TYPES = Map.of(
			"Hit", "record Hit(String id, float score) {\n}\n",
			"Index", "interface Index {\n\t<Q> java.util.List<java.util.List<Hit>> search(java.util.List<Q> queries);\n}\n",
			"Blur", "final class Blur {\n\tstatic final dev.gpucompute.KernelSource BLUR = dev.gpucompute.test.guide.Blur.BLUR;\n}\n");

	record Snippet(String page, int number, int line, String code) {

		@Override
		public String toString() {
			return this.page + " snippet " + this.number + " (line " + this.line + ")";
		}

	}

	@TestFactory
	Stream<DynamicTest> everyJavaSnippetCompilesWithTheImportsItShows(@TempDir Path work) throws IOException {
		List<Snippet> snippets = new ArrayList<>();
		for (String page : PAGES) {
			String markdown = Files.readString(ROOT.resolve(page));
			Matcher block = BLOCK.matcher(markdown);
			int number = 0;
			while (block.find()) {
				String indent = block.group(1);
				String code = block.group(2).lines()
					.map((line) -> line.startsWith(indent) ? line.substring(indent.length()) : line)
					.reduce((a, b) -> a + "\n" + b)
					.orElse("");
				int line = (int) markdown.substring(0, block.start()).lines().count() + 1;
				number++;
				if (!code.strip().startsWith(BEFORE)) {
					snippets.add(new Snippet(page, number, line, code));
				}
			}
		}
		assertThat(snippets).as("Java snippets in %s", PAGES).hasSizeGreaterThanOrEqualTo(12);
		return snippets.stream().map((snippet) -> DynamicTest.dynamicTest(snippet.toString(), () -> compile(snippet,
				work.resolve(snippet.page().replaceAll("\\W", "_") + "_" + snippet.number()))));
	}

	private static void compile(Snippet snippet, Path dir) throws IOException {
		String pkg = "doc" + Integer.toHexString(snippet.toString().hashCode() & 0x7fffffff);
		Path sources = Files.createDirectories(dir.resolve("src").resolve(pkg));
		Path classes = Files.createDirectories(dir.resolve("classes"));
		List<String> lines = snippet.code().lines().toList();
		int body = 0;
		while (body < lines.size() && (lines.get(body).isBlank() || lines.get(body).startsWith("import "))) {
			body++;
		}
		String imports = String.join("\n", lines.subList(0, body));
		List<String> rest = lines.subList(body, lines.size());
		String code = String.join("\n", rest);
		List<Path> files = new ArrayList<>();
		Matcher type = TYPE.matcher(code);
		String unit;
		String file;
		if (type.find() && code.substring(0, type.start()).isBlank()) {
			unit = code;
			file = (type.group(1) != null) ? type.group(3) : "Snippet";
		}
		else {
			String givens = givens(rest);
			String first = rest.stream().map(String::strip).filter((l) -> !l.isEmpty() && !l.startsWith("//"))
				.findFirst().orElse("");
			boolean members = first.startsWith("@") || METHOD.matcher(first).matches();
			unit = "abstract class Snippet {\n" + givens + "\n"
					+ (members ? code : "void run() throws Exception {\n" + code + "\n}") + "\n}";
			file = "Snippet";
		}
		String source = "package " + pkg + ";\n\n" + imports + "\n\n" + unit + "\n";
		Path main = sources.resolve(file + ".java");
		Files.writeString(main, source);
		files.add(main);
		for (Map.Entry<String, String> assumed : APPLICATION_TYPES.entrySet()) {
			boolean used = Pattern.compile("\\b" + assumed.getKey() + "\\b").matcher(code).find();
			boolean declared = Pattern.compile("(class|record|interface|enum)\\s+" + assumed.getKey() + "\\b")
				.matcher(code)
				.find();
			if (used && !declared) {
				Path stub = sources.resolve(assumed.getKey() + ".java");
				Files.writeString(stub, "package " + pkg + ";\n\n" + assumed.getValue());
				files.add(stub);
			}
		}
		// Surefire runs the tests from a manifest-only jar; it states the real class path here.
		String classPath = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
		List<String> options = List.of("-classpath", classPath, "-d", classes.toString(), "--release", "17",
				"-proc:none", "-Xlint:deprecation,removal", "-Werror", "-Xmaxerrs", "20");
		JavaCompiler compiler = ToolProvider.getSystemJavaCompiler();
		StringWriter output = new StringWriter();
		try (var fileManager = compiler.getStandardFileManager(null, null, null)) {
			boolean compiled = compiler
				.getTask(output, fileManager, null, options, null, fileManager.getJavaFileObjectsFromPaths(files))
				.call();
			assertThat(compiled).as("%s does not compile as shown:%n%s%n--- compiled as ---%n%s", snippet, output, source)
				.isTrue();
		}
	}

	/** The snippet's "// Given: ..." declarations, as fields and abstract methods of the wrapping class. */
	private static String givens(List<String> lines) {
		StringBuilder text = new StringBuilder();
		boolean inGiven = false;
		for (String line : lines) {
			String stripped = line.strip();
			if (stripped.startsWith("// Given:")) {
				inGiven = true;
				text.append(stripped.substring("// Given:".length()));
			}
			else if (inGiven && stripped.startsWith("//")) {
				text.append(' ').append(stripped.substring(2));
			}
			else if (inGiven) {
				break;
			}
		}
		StringBuilder declarations = new StringBuilder();
		for (String declaration : text.toString().split(";")) {
			String d = declaration.strip();
			if (!d.isEmpty()) {
				declarations.append(d.contains("(") ? "abstract " + d + ";\n" : d + ";\n");
			}
		}
		return declarations.toString();
	}

}
