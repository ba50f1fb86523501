// Kernels of the backend contract suite (runtime/src/test/java/dev/gpucompute/contract).
// Each has a Java twin in ContractKernels that the CPU backend runs.
// Regenerate the PTX with:
//   nvcc -ptx -arch=compute_90 contract-kernels.cu -o contract-kernels.ptx

__device__ __forceinline__ unsigned long long now_ns() {
	unsigned long long t;
	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	return t;
}

// Appends `id` to log[1..]; log[0] counts entries. One thread: order within a stream shows in the log.
extern "C" __global__ void append(int* log, int id) {
	int p = log[0];
	log[1 + p] = id;
	log[0] = p + 1;
}

// Sets flags[me], then waits (up to timeoutMs) for flags[other]; seen[me] = 1 if it came.
// Two of these can only both see each other when they run at the same time.
extern "C" __global__ void rendezvous(int me, int other, int* flags, int* seen, int timeoutMs) {
	volatile int* f = flags;
	atomicExch(&flags[me], 1);
	__threadfence_system();
	unsigned long long end = now_ns() + (unsigned long long) timeoutMs * 1000000ull;
	while (f[other] == 0 && now_ns() < end) {
		__nanosleep(1000);
	}
	seen[me] = (f[other] != 0) ? 1 : 0;
}

// Waits `millis`, then writes value into cell[index].
extern "C" __global__ void sleep_then_set(int* cell, int index, int value, int millis) {
	unsigned long long end = now_ns() + (unsigned long long) millis * 1000000ull;
	while (now_ns() < end) {
		__nanosleep(10000);
	}
	cell[index] = value;
}

// dst[dstIndex] = src[srcIndex] * scale
extern "C" __global__ void copy_cell(const int* src, int srcIndex, int* dst, int dstIndex, int scale) {
	dst[dstIndex] = src[srcIndex] * scale;
}

// out[0] = sum of in[0..n)
extern "C" __global__ void sum_cells(int n, const int* in, int* out) {
	int s = 0;
	for (int i = 0; i < n; i++) {
		s += in[i];
	}
	out[0] = s;
}

// y[i] = a * x[i] + y[i]
extern "C" __global__ void saxpy(int n, float a, const float* x, float* y) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) {
		y[i] = a * x[i] + y[i];
	}
}

// saxpy for blocks of at most 32 threads. Launched with larger blocks, CUDA refuses the launch (a
// failure that leaves the context usable); its Java twin throws while it runs. The fault-injection
// soak uses it as the failing kernel on every backend.
extern "C" __global__ void __launch_bounds__(32) bounded_saxpy(int n, float a, const float* x, float* y) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) {
		y[i] = a * x[i] + y[i];
	}
}
