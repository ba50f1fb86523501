package dev.gpucompute;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;

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

	private final @Nullable CudaForm cudaForm;

	private final byte @Nullable [] cudaCode;

	private final List<String> compileOptions;

	private final @Nullable CpuKernel cpu;

	/** Code compiled ahead of time from the CUDA C source (PTX, cubin or fatbin), or {@code null}. */
	private final @Nullable CudaForm prebuiltForm;

	private final byte @Nullable [] prebuiltCode;

	private KernelSource(String name, ParamType[] params, @Nullable CudaForm cudaForm, byte @Nullable [] cudaCode,
			List<String> compileOptions, @Nullable CpuKernel cpu) {
		this(name, params, cudaForm, cudaCode, compileOptions, cpu, null, null);
	}

	private KernelSource(String name, ParamType[] params, @Nullable CudaForm cudaForm, byte @Nullable [] cudaCode,
			List<String> compileOptions, @Nullable CpuKernel cpu, @Nullable CudaForm prebuiltForm, byte @Nullable [] prebuiltCode) {
		this.name = name;
		this.params = params;
		this.cudaForm = cudaForm;
		this.cudaCode = cudaCode;
		this.compileOptions = compileOptions;
		this.cpu = cpu;
		this.prebuiltForm = prebuiltForm;
		this.prebuiltCode = prebuiltCode;
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
		return new KernelSource(this.name, types.clone(), this.cudaForm, this.cudaCode, this.compileOptions, this.cpu,
				this.prebuiltForm, this.prebuiltCode);
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
			KernelSource read = withCuda(formOf(path), in.readAllBytes());
			if (read.cudaForm != CudaForm.SOURCE) {
				return read;
			}
			String stem = path.substring(0, path.length() - ".cu".length());
			for (CudaForm form : List.of(CudaForm.FATBIN, CudaForm.CUBIN, CudaForm.PTX)) {
				try (InputStream prebuilt = loader.getResourceAsStream(stem + "." + form.name().toLowerCase(java.util.Locale.ROOT))) {
					if (prebuilt != null) {
						return read.prebuilt(form, prebuilt.readAllBytes());
					}
				}
			}
			return read;
		}
		catch (IOException ex) {
			throw new UncheckedIOException(ex);
		}
	}

	/**
	 * A copy with code compiled ahead of time from this kernel's CUDA C source (for example by
	 * {@code nvcc -fatbin} at build time). The CUDA backend loads it instead of compiling the
	 * source, and compiles the source only when the driver rejects it (no code for the device's
	 * architecture, or PTX newer than the driver). {@link #cudaResource(String)} attaches a
	 * {@code <name>.fatbin}, {@code .cubin} or {@code .ptx} found beside {@code <name>.cu}, in that
	 * order; giving the CUDA code again ({@link #cuda}, {@link #withCuda}) drops it.
	 * @param form {@link CudaForm#PTX}, {@link CudaForm#CUBIN} or {@link CudaForm#FATBIN}
	 * @throws IllegalStateException when this source has no CUDA C source
	 */
	public KernelSource prebuilt(CudaForm form, byte[] image) {
		Objects.requireNonNull(form, "form");
		Objects.requireNonNull(image, "image");
		if (form == CudaForm.SOURCE) {
			throw new IllegalArgumentException("Prebuilt code is PTX, a cubin or a fatbin, not CUDA C source");
		}
		if (this.cudaForm != CudaForm.SOURCE) {
			throw new IllegalStateException("Kernel '" + this.name + "' has no CUDA C source to go with prebuilt code");
		}
		return new KernelSource(this.name, this.params, this.cudaForm, this.cudaCode, this.compileOptions, this.cpu, form,
				image.clone());
	}

	/** The form of the code compiled ahead of time, or {@code null} when there is none. */
	public @Nullable CudaForm prebuiltForm() {
		return this.prebuiltForm;
	}

	/** The code compiled ahead of time (a copy), or {@code null}. */
	public byte @Nullable [] prebuiltCode() {
		return (this.prebuiltCode != null) ? this.prebuiltCode.clone() : null;
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
		return new KernelSource(this.name, this.params, this.cudaForm, this.cudaCode, List.of(options), this.cpu,
				this.prebuiltForm, this.prebuiltCode);
	}

	/** The Java implementation for the CPU backend. */
	public KernelSource cpu(CpuKernel implementation) {
		return new KernelSource(this.name, this.params, this.cudaForm, this.cudaCode, this.compileOptions,
				Objects.requireNonNull(implementation, "implementation"), this.prebuiltForm, this.prebuiltCode);
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
	public @Nullable CudaForm cudaForm() {
		return this.cudaForm;
	}

	/** The CUDA code's bytes (UTF-8 text for source and PTX), or {@code null}. A copy. */
	public byte @Nullable [] cudaCode() {
		return (this.cudaCode != null) ? this.cudaCode.clone() : null;
	}

	/** The CUDA code as text (for {@link CudaForm#SOURCE} and {@link CudaForm#PTX}), or {@code null}. */
	public @Nullable String cudaText() {
		return (this.cudaCode != null && (this.cudaForm == CudaForm.SOURCE || this.cudaForm == CudaForm.PTX))
				? new String(this.cudaCode, StandardCharsets.UTF_8) : null;
	}

	public List<String> compileOptions() {
		return this.compileOptions;
	}

	/** The CPU implementation, or {@code null}. */
	public @Nullable CpuKernel cpu() {
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

	/**
	 * What differs from {@code other}, in words ("its parameters are [INT], not [FLOAT]"), or
	 * {@code null} when {@link #sameCode(KernelSource)}: for the message that refuses a different
	 * kernel under a name already loaded.
	 */
	public @Nullable String differenceFrom(KernelSource other) {
		Objects.requireNonNull(other, "other");
		if (!Arrays.equals(this.params, other.params)) {
			return "its parameters are " + List.of(this.params) + ", not " + List.of(other.params);
		}
		if (this.cudaForm != other.cudaForm || !Arrays.equals(this.cudaCode, other.cudaCode)
				|| this.prebuiltForm != other.prebuiltForm || !Arrays.equals(this.prebuiltCode, other.prebuiltCode)) {
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
		return "KernelSource[" + this.name + List.of(this.params) + ", cuda=" + this.cudaForm
				+ ((this.prebuiltForm != null) ? ", prebuilt=" + this.prebuiltForm : "") + ", cpu=" + (this.cpu != null) + "]";
	}

}
