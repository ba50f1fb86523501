package dev.gpucompute.internal.expression;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import org.codehaus.commons.compiler.CompileException;
import org.codehaus.janino.SimpleCompiler;

import dev.gpucompute.CpuKernel;

/**
 * Compiles generated Java into a {@link CpuKernel} with Janino (javax.tools is not there on a JRE),
 * once per source text: the same expression defined twice gets the same body object, which is also
 * what makes two definitions of one kernel the same code to the launcher. Thread-safe.
 */
public final class JavaBodies {

	/** Bodies by their source; the sources are the application's own kernels, so the map stays small. */
	private static final Map<String, CpuKernel> BODIES = new ConcurrentHashMap<>();

	private JavaBodies() {
	}

	/**
	 * The body compiled from {@code source}, which defines the public class {@code className} (in no
	 * package) implementing {@link CpuKernel} with a public no-argument constructor.
	 * @throws IllegalStateException when it does not compile: a fault of the generator, not of the expression
	 */
	public static CpuKernel compile(String className, String source) {
		return BODIES.computeIfAbsent(source, (text) -> {
			SimpleCompiler compiler = new SimpleCompiler();
			compiler.setParentClassLoader(CpuKernel.class.getClassLoader());
			try {
				compiler.cook(text);
				Class<?> type = compiler.getClassLoader().loadClass(className);
				return (CpuKernel) type.getDeclaredConstructor().newInstance();
			}
			catch (CompileException ex) {
				throw new IllegalStateException("The Java generated for an expression kernel does not compile ("
						+ ex.getMessage() + "); this is a bug of gpu-compute. The source:\n" + text, ex);
			}
			catch (ReflectiveOperationException ex) {
				throw new IllegalStateException("The Java generated for an expression kernel cannot be instantiated", ex);
			}
		});
	}

	/** How many bodies have been compiled (tests: a second definition of one kernel compiles nothing). */
	public static int compiled() {
		return BODIES.size();
	}

}
