#include <cuda_fp16.h>
extern "C" __global__ void half_scale(int n, __half factor, __half* data) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) data[i] = __hmul(data[i], factor);
}
