package dev.gpucompute.autoconfigure;

import java.io.OutputStream;
import java.io.PrintStream;
import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.ExtensionContext.Namespace;
import org.junit.jupiter.api.extension.ParameterContext;
import org.junit.jupiter.api.extension.ParameterResolver;

import org.springframework.boot.ansi.AnsiOutput;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;

/**
 * Spring Boot's {@link OutputCaptureExtension} without the echo, for tests that make the application
 * report failures on purpose (start-up failure reports, GPU failures answered with 500 and logged
 * with their stack): {@code System.out} and {@code System.err}, the console log included, are
 * captured for each test class and each test, and a {@link CapturedOutput} parameter holds what was
 * written since the class started, minus the earlier tests' output, as Spring Boot's does. Unlike
 * Spring Boot's, nothing reaches the build's console while the test passes, so that a real failure
 * stands out in a green build's log; when a test or its class fails, what it wrote is printed after
 * all, under a line that names it. ANSI colours are off while capturing, as in Spring Boot's.
 *
 * <p>The sample application's tests have a twin of this class ({@code dev.gpucompute.sample.QuietOutputExtension}):
 * test classes are not shared between modules.
 */
public final class QuietOutputExtension
		implements BeforeAllCallback, AfterAllCallback, BeforeEachCallback, AfterEachCallback, ParameterResolver {

	private static final Namespace NAMESPACE = Namespace.create(QuietOutputExtension.class);

	@Override
	public void beforeAll(ExtensionContext context) {
		context.getStore(NAMESPACE).put(Capture.class, Capture.start(null));
	}

	@Override
	public void beforeEach(ExtensionContext context) {
		Capture outer = context.getStore(NAMESPACE).get(Capture.class, Capture.class);
		context.getStore(NAMESPACE).put(Capture.class, Capture.start(outer));
	}

	@Override
	public void afterEach(ExtensionContext context) {
		end(context, context.getRequiredTestClass().getSimpleName() + " " + context.getDisplayName());
	}

	@Override
	public void afterAll(ExtensionContext context) {
		end(context, context.getRequiredTestClass().getSimpleName());
	}

	private static void end(ExtensionContext context, String name) {
		Capture capture = context.getStore(NAMESPACE).remove(Capture.class, Capture.class);
		if (capture == null) {
			return;
		}
		capture.stop();
		if (context.getExecutionException().isPresent()) {
			capture.replay(name);
		}
	}

	@Override
	public boolean supportsParameter(ParameterContext parameterContext, ExtensionContext extensionContext) {
		return parameterContext.getParameter().getType() == CapturedOutput.class;
	}

	@Override
	public Object resolveParameter(ParameterContext parameterContext, ExtensionContext extensionContext) {
		return extensionContext.getStore(NAMESPACE).get(Capture.class, Capture.class);
	}

	/** One capture: of a class (no outer one) or of a test (inside its class's). Thread-safe. */
	static final class Capture implements CapturedOutput {

		private final Capture outer;

		private final PrintStream out;

		private final PrintStream err;

		private final AnsiOutput.Enabled ansi;

		private final List<String[]> texts = new ArrayList<>();

		private Capture(Capture outer) {
			this.outer = outer;
			this.out = System.out;
			this.err = System.err;
			this.ansi = AnsiOutput.getEnabled();
		}

		static Capture start(Capture outer) {
			Capture capture = new Capture(outer);
			AnsiOutput.setEnabled(AnsiOutput.Enabled.NEVER);
			System.setOut(capture.stream("out"));
			System.setErr(capture.stream("err"));
			return capture;
		}

		private PrintStream stream(String type) {
			return new PrintStream(new OutputStream() {

				@Override
				public void write(int b) {
					write(new byte[] { (byte) b }, 0, 1);
				}

				@Override
				public void write(byte[] b, int off, int len) {
					String text = new String(b, off, len);
					synchronized (Capture.this.texts) {
						Capture.this.texts.add(new String[] { type, text });
					}
				}

			}, true);
		}

		void stop() {
			System.setOut(this.out);
			System.setErr(this.err);
			AnsiOutput.setEnabled(this.ansi);
		}

		/** Prints what was captured to the console this capture's outermost one replaced. */
		void replay(String name) {
			Capture outermost = this;
			while (outermost.outer != null) {
				outermost = outermost.outer;
			}
			PrintStream console = outermost.out;
			console.println("---- " + name + " failed; what it wrote while its output was captured:");
			console.print(getAll());
			console.println("---- end of the captured output of " + name);
			console.flush();
		}

		private String get(String type) {
			StringBuilder text = new StringBuilder((this.outer != null) ? this.outer.get(type) : "");
			synchronized (this.texts) {
				for (String[] captured : this.texts) {
					if (type == null || type.equals(captured[0])) {
						text.append(captured[1]);
					}
				}
			}
			return text.toString();
		}

		@Override
		public String getAll() {
			return get(null);
		}

		@Override
		public String getOut() {
			return get("out");
		}

		@Override
		public String getErr() {
			return get("err");
		}

		@Override
		public String toString() {
			return getAll();
		}

	}

}
