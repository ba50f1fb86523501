// Runs one launch of an expression kernel, from its generated CUDA source, on the emulator of
// cuda-emulator/cuda_emu.h.
//
//   expr_launch <input> <output>
//
// Input (little-endian): int32 kernel, gridX, blockX, int64 seed, int32 argument count, then per argument
// an int32 kind (0 int, 1 long, 2 float, 3 double, 4 buffer) and its value: 8 bytes for a scalar (an int
// or a float in the low 4), or an int64 byte count and that many bytes for a buffer.
// Output: every buffer's bytes after the launch, in argument order.
//
// kernels.inc is written by the test that builds this program (ExpressionEmulator): each generated
// kernel in a namespace of its own, and dispatch(), which calls kernel number `kernel` with the arguments.
#include "cuda_emu.h"

#include <cstdio>
#include <vector>

namespace {

FILE* input;

/** A buffer argument: converts to the kernel's pointer type, whatever its element type. */
struct AnyPointer {
	void* p;

	template <typename T>
	operator T*() const
	{
		return static_cast<T*>(p);
	}
};

struct Arg {
	int kind = 0;
	uint64_t bits = 0;
	void* ptr = nullptr;
	long long bytes = 0;

	int i32() const { return (int) (uint32_t) bits; }
	long long i64() const { return (long long) bits; }
	float f32() const { return emu::unbits<float>(bits & 0xffffffffu); }
	double f64() const { return emu::unbits<double>(bits); }
	AnyPointer buffer() const { return AnyPointer { ptr }; }
};

void read(void* target, size_t bytes)
{
	if (bytes > 0 && std::fread(target, bytes, 1, input) != 1) {
		std::fprintf(stderr, "short input\n");
		std::exit(2);
	}
}

template <typename T>
T next()
{
	T v;
	read(&v, sizeof v);
	return v;
}

} // namespace

#include "kernels.inc"

int main(int argc, char** argv)
{
	if (argc != 3) {
		std::fprintf(stderr, "usage: expr_launch <input> <output>\n");
		return 2;
	}
	input = std::fopen(argv[1], "rb");
	if (input == nullptr) {
		std::perror(argv[1]);
		return 2;
	}
	const int kernel = next<int>();
	const unsigned gridX = (unsigned) next<int>();
	const unsigned blockX = (unsigned) next<int>();
	const uint64_t seed = next<uint64_t>();
	const int count = next<int>();
	std::vector<Arg> args(count);
	for (Arg& arg : args) {
		arg.kind = next<int>();
		if (arg.kind == 4) {
			arg.bytes = next<long long>();
			// Device-like memory: 256-byte aligned, exactly the bytes given (ASan sees the exact end).
			if (posix_memalign(&arg.ptr, 256, (size_t) (arg.bytes > 0 ? arg.bytes : 1)) != 0) {
				std::fprintf(stderr, "out of memory\n");
				return 2;
			}
			read(arg.ptr, (size_t) arg.bytes);
		}
		else {
			arg.bits = next<uint64_t>();
		}
	}
	std::fclose(input);
	dispatch(kernel, uint3 { gridX, 1, 1 }, uint3 { blockX, 1, 1 }, seed, args);
	FILE* output = std::fopen(argv[2], "wb");
	if (output == nullptr) {
		std::perror(argv[2]);
		return 2;
	}
	for (Arg& arg : args) {
		if (arg.kind == 4 && arg.bytes > 0 && std::fwrite(arg.ptr, (size_t) arg.bytes, 1, output) != 1) {
			std::perror(argv[2]);
			return 2;
		}
		std::free(arg.ptr);
	}
	std::fclose(output);
	return 0;
}
