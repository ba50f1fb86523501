package dev.gpucompute.internal.expression;

import java.util.List;
import java.util.Set;

import dev.gpucompute.ElementType;
import dev.gpucompute.ParamType;
import org.jspecify.annotations.Nullable;

/**
 * What the generator made from a kernel's expressions: the launch parameters, the CUDA C source and
 * the Java source of the CPU body (not compiled yet: {@link JavaBodies} does that).
 *
 * @param name the kernel's name (its CUDA entry point)
 * @param paramNames the launch parameters' names, in order
 * @param params the launch parameters' types, in order
 * @param cuda the CUDA C source
 * @param javaClass the name of the class {@code java} defines
 * @param java the Java source of the CPU body
 * @param ulps the most ulps a result may differ by between the backends: 0 when only exact
 * operations are used
 * @param inexactFunctions the functions used whose results may differ
 * @param partials for a whole-input reduction, the element type of its partial results; else null
 */
public record Generated(String name, List<String> paramNames, List<ParamType> params, String cuda, String javaClass,
		String java, int ulps, Set<String> inexactFunctions, @Nullable ElementType partials) {
}
