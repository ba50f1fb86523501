package dev.gpucompute;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.regex.Pattern;

/**
 * Everything needed to load one kernel on any backend: its name (the {@code extern "C"} entry
 * point), its parameter types, its CUDA form (CUDA C source, PTX, cubin or fatbin) and optionally a
 * Java implementation for the CPU backend.
 *
 * <p>Immutable: every {@code with}-style method returns a new instance, so a source can be a
 * constant shared by all threads.
 *
 * <pre>{@code
 * KernelSource saxpy = KernelSource.named("saxpy")
 *     .params(INT, FLOAT, BUFFER, BUFFER)
 *     .cuda("extern \"C\" __global__ void saxpy(int n, float a, const float* x, float* y) { ... }")
 *     .cpu((block, args) -> { ... });
 * }</pre>
 */
public final class KernelSource {

	/** The form of a kernel's CUDA code. */
	public enum CudaForm {

		/** CUDA C++ source, compiled at load time. */
		SOURCE,

		/** PTX text, JIT-compiled by the driver. */
		PTX,

		/** A cubin for one architecture. */
		CUBIN,

		/** A fatbin with several architectures. */
		FATBIN

	}

	private static final Pattern NAME = Pattern.compile("[A-Za-z_][A-Za-z0-9_]*");

	private final String name;

	private final ParamType[] params;

	private final CudaForm cudaForm;

	private final byte[] cudaCode;

	private final List<String> compileOptions;

	private final CpuKernel cpu;

	private KernelSource(String name, ParamType[] params, CudaForm cudaForm, byte[] cudaCode,
			List<String> compileOptions, CpuKernel cpu) {
		this.name = name;
		this.params = params;
		this.cudaForm = cudaForm;
		this.cudaCode = cudaCode;
		this.compileOptions = compileOptions;
		this.cpu = cpu;
	}

	/**
	 * Starts a kernel source with the given entry-point name and no parameters.
	 * @param name a C identifier: the kernel's {@code extern "C"} name
	 */
	public static KernelSource named(String name) {
		if (name == null || !NAME.matcher(name).matches()) {
			throw new IllegalArgumentException("Kernel name must be a C identifier, got '" + name + "'");
		}
		return new KernelSource(name, new ParamType[0], null, null, List.of(), null);
	}

	/** Declares the parameter types, checked at every launch. */
	public KernelSource params(ParamType... types) {
		Objects.requireNonNull(types, "types");
		for (ParamType type : types) {
			Objects.requireNonNull(type, "parameter type");
		}
		return new KernelSource(this.name, types.clone(), this.cudaForm, this.cudaCode, this.compileOptions, this.cpu);
	}

	/** CUDA C++ source, compiled when the kernel is loaded on the CUDA backend. */
	public KernelSource cuda(String source) {
		return withCuda(CudaForm.SOURCE, Objects.requireNonNull(source, "source").getBytes(StandardCharsets.UTF_8));
	}

	/** PTX text. */
	public KernelSource ptx(String ptx) {
		return withCuda(CudaForm.PTX, Objects.requireNonNull(ptx, "ptx").getBytes(StandardCharsets.UTF_8));
	}

	/** A cubin image. */
	public KernelSource cubin(byte[] image) {
		return withCuda(CudaForm.CUBIN, Objects.requireNonNull(image, "image").clone());
	}

	/** A fatbin image. */
	public KernelSource fatbin(byte[] image) {
		return withCuda(CudaForm.FATBIN, Objects.requireNonNull(image, "image").clone());
	}

	/**
	 * The CUDA form read from a class-path resource; the form follows the extension
	 * ({@code .cu}, {@code .ptx}, {@code .cubin}, {@code .fatbin}).
	 * @param resource a class-path resource name, e.g. {@code gpu/kernels/saxpy.cu}
	 */
	public KernelSource cudaResource(String resource) {
		Objects.requireNonNull(resource, "resource");
		ClassLoader loader = Thread.currentThread().getContextClassLoader();
		if (loader == null) {
			loader = KernelSource.class.getClassLoader();
		}
		String path = resource.startsWith("/") ? resource.substring(1) : resource;
		try (InputStream in = loader.getResourceAsStream(path)) {
			if (in == null) {
				throw new KernelCompilationException(this.name, "resource '" + resource + "' not found on the class path", null, null);
			}
			return withCuda(formOf(path), in.readAllBytes());
		}
		catch (IOException ex) {
			throw new UncheckedIOException(ex);
		}
	}

	/**
	 * The CUDA form that a file name stands for, from its extension.
	 * @throws IllegalArgumentException for an unknown extension
	 */
	public static CudaForm formOf(String fileName) {
		String lower = fileName.toLowerCase(java.util.Locale.ROOT);
		if (lower.endsWith(".cu")) {
			return CudaForm.SOURCE;
		}
		if (lower.endsWith(".ptx")) {
			return CudaForm.PTX;
		}
		if (lower.endsWith(".cubin")) {
			return CudaForm.CUBIN;
		}
		if (lower.endsWith(".fatbin")) {
			return CudaForm.FATBIN;
		}
		throw new IllegalArgumentException("Not a kernel file (.cu, .ptx, .cubin, .fatbin): " + fileName);
	}

	/** A copy with the CUDA code given in one of its forms. */
	public KernelSource withCuda(CudaForm form, byte[] code) {
		Objects.requireNonNull(form, "form");
		Objects.requireNonNull(code, "code");
		return new KernelSource(this.name, this.params, form, code, this.compileOptions, this.cpu);
	}

	/** Extra compiler options for CUDA C source (added to {@code gpu.kernels.compile-options}). */
	public KernelSource compileOptions(String... options) {
		Objects.requireNonNull(options, "options");
		return new KernelSource(this.name, this.params, this.cudaForm, this.cudaCode, List.of(options), this.cpu);
	}

	/** The Java implementation for the CPU backend. */
	public KernelSource cpu(CpuKernel implementation) {
		return new KernelSource(this.name, this.params, this.cudaForm, this.cudaCode, this.compileOptions,
				Objects.requireNonNull(implementation, "implementation"));
	}

	public String name() {
		return this.name;
	}

	/** The declared parameter types (a copy). */
	public List<ParamType> params() {
		return List.of(this.params);
	}

	/** Number of declared parameters. */
	public int paramCount() {
		return this.params.length;
	}

	/** The type of parameter {@code index}. */
	public ParamType param(int index) {
		return this.params[index];
	}

	/** The CUDA form, or {@code null} when the kernel has only a CPU implementation. */
	public CudaForm cudaForm() {
		return this.cudaForm;
	}

	/** The CUDA code's bytes (UTF-8 text for source and PTX), or {@code null}. A copy. */
	public byte[] cudaCode() {
		return (this.cudaCode != null) ? this.cudaCode.clone() : null;
	}

	/** The CUDA code as text (for {@link CudaForm#SOURCE} and {@link CudaForm#PTX}), or {@code null}. */
	public String cudaText() {
		return (this.cudaCode != null && (this.cudaForm == CudaForm.SOURCE || this.cudaForm == CudaForm.PTX))
				? new String(this.cudaCode, StandardCharsets.UTF_8) : null;
	}

	public List<String> compileOptions() {
		return this.compileOptions;
	}

	/** The CPU implementation, or {@code null}. */
	public CpuKernel cpu() {
		return this.cpu;
	}

	/**
	 * Whether this source loads and runs the same kernel as {@code other}: the same parameters, CUDA
	 * code, compile options and CPU implementation (the same object: two lambdas are never compared
	 * by what they do). Used to refuse a different kernel under a name already loaded.
	 */
	public boolean sameCode(KernelSource other) {
		return differenceFrom(other) == null;
	}

	/** What differs from {@code other}, in words, or {@code null} when nothing does. */
	String differenceFrom(KernelSource other) {
		Objects.requireNonNull(other, "other");
		if (!Arrays.equals(this.params, other.params)) {
			return "its parameters are " + List.of(this.params) + ", not " + List.of(other.params);
		}
		if (this.cudaForm != other.cudaForm || !Arrays.equals(this.cudaCode, other.cudaCode)) {
			return "its CUDA code differs";
		}
		if (!this.compileOptions.equals(other.compileOptions)) {
			return "its compile options are " + this.compileOptions + ", not " + other.compileOptions;
		}
		if (this.cpu != other.cpu) {
			return "its CPU implementation is a different object";
		}
		return null;
	}

	@Override
	public String toString() {
		return "KernelSource[" + this.name + List.of(this.params) + ", cuda=" + this.cudaForm + ", cpu="
				+ (this.cpu != null) + "]";
	}

}
