extern "C" __global__ void my_kernel(int n, float* data) {
}
