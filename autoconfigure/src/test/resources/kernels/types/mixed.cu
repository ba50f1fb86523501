/* Every scalar type the launcher can pass, with qualifiers, comments and launch bounds. */
extern "C" {
__global__ void __launch_bounds__(256, 2) mixed(
		const unsigned int count,   // INT
		long long offset,           /* LONG */
		size_t bytes,
		double scale,
		volatile float bias,
		const double* __restrict__ in,
		int out[]) {
}
}
