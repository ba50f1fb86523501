// Kernels used by the CUDA backend's GPU tests (dev.gpucompute.cuda).
// test-kernels.ptx next to this file is generated from it; regenerate with:
//   nvcc -ptx -arch=compute_75 -o test-kernels.ptx test-kernels.cu
//   sed -i 's/^\.version .*/.version 7.8/' test-kernels.ptx
// (.version is lowered so that drivers older than the compiler can JIT it; these kernels use
// nothing newer than PTX ISA 7.8 / CUDA 11.8.)

__device__ __forceinline__ unsigned long long globalNanos() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

// y = a * x + y
extern "C" __global__ void saxpy(int n, float a, const float* x, float* y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}

// Rendezvous of two kernels on two streams: each announces itself in flags[me], then waits
// (at most timeoutNanos) until flags[other] is set. seen[me] = 1 when the other kernel was seen
// running at the same time, so both seen flags are 1 only when the kernels overlapped.
extern "C" __global__ void rendezvous(int* flags, int* seen, int me, int other, long long timeoutNanos) {
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    atomicExch(&flags[me], 1);
    __threadfence();
    unsigned long long start = globalNanos();
    volatile int* v = flags;
    while (v[other] == 0 && (long long)(globalNanos() - start) < timeoutNanos) {
    }
    seen[me] = (v[other] != 0) ? 1 : 0;
}

// Busy-waits for the given time, then writes value to out[0].
extern "C" __global__ void sleep_then_write(long long nanos, int* out, int value) {
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    unsigned long long start = globalNanos();
    while ((long long)(globalNanos() - start) < nanos) {
    }
    out[0] = value;
}

// Writes far outside any allocation: an illegal address, a sticky CUDA error.
extern "C" __global__ void write_out_of_bounds(int* p, long long elementOffset) {
    if (blockIdx.x == 0 && threadIdx.x == 0) p[elementOffset] = 42;
}

// out[i] = in[i] * factor for double and long parameters (checks 8-byte parameter packing).
extern "C" __global__ void scale_mixed(long long n, double factor, const double* in, double* out, int* count) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = in[i] * factor;
        atomicAdd(count, 1);
    }
}

// out[0] = v: a 64-bit parameter, launched with a 32-bit argument by the packing test.
extern "C" __global__ void store_i64(long long v, long long* out) {
    if (blockIdx.x == 0 && threadIdx.x == 0) out[0] = v;
}

// out[i] = in[n - 1 - i] through dynamic shared memory of n ints (n * 4 bytes, above 48 KiB in the
// test, so the launch needs the opt-in of cuFuncSetAttribute). One block.
extern "C" __global__ void shared_reverse(int n, const int* in, int* out) {
    extern __shared__ int buffer[];
    for (int i = threadIdx.x; i < n; i += blockDim.x) buffer[i] = in[i];
    __syncthreads();
    for (int i = threadIdx.x; i < n; i += blockDim.x) out[i] = buffer[n - 1 - i];
}
