extern "C" __global__ void something_else(int n, float* data) {
}
