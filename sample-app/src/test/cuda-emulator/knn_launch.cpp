// Runs one launch of a search kernel, from its own CUDA source, on the emulator of cuda_emu.h.
//
//   knn_launch <input> <output>
//
// Input (little-endian): int32 kernel (1: knn_fused, 2: knn_topk, 3: knn_merge), int32 gridX, gridY, blockX,
// sharedBytes, yieldAtAtomics, int64 seed, then the kernel's own part:
//   knn_fused: int32 n, dim, count, k, rowsPerBlock, groupQueries, outEntries; float32 vectors[n * dim],
//              queries[count * dim]
//   knn_topk:  int32 m, k, useIds, idBase, rows, outEntries; float32 inScores[rows * m], and when useIds
//              int32 inIds[rows * m]
//   knn_merge: int32 runs, k, queries, outEntries; float32 inScores[queries * runs * k],
//              int32 inIds[queries * runs * k]
// Output: float32 scores[outEntries], int32 ids[outEntries] (entries the kernel does not write keep
// the markers NaN 0x7fbadbad and -2). Exit 3 with a message on stderr when the emulator finds a
// violation (see cuda_emu.h), 1 with a sanitizer's report.
//
// kernels.inc is written by the test that builds this program (KernelEmulator): the kernels' .cu files
// from the class path, each in a namespace of its own, with their `extern __shared__` array turned
// into a pointer to the emulator's dynamic shared memory.
#include "cuda_emu.h"

#include "kernels.inc"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <vector>

namespace {

FILE* input;
std::vector<void*> owned;

int readInt()
{
	int v;
	if (std::fread(&v, sizeof v, 1, input) != 1) {
		std::fprintf(stderr, "short input\n");
		std::exit(2);
	}
	return v;
}

long long readLong()
{
	long long v;
	if (std::fread(&v, sizeof v, 1, input) != 1) {
		std::fprintf(stderr, "short input\n");
		std::exit(2);
	}
	return v;
}

/** Device-like memory: 256-byte aligned, exactly `count` elements (ASan sees the exact end). */
template <typename T>
T* deviceArray(long long count)
{
	void* memory = nullptr;
	if (posix_memalign(&memory, 256, (size_t) (count > 0 ? count : 1) * sizeof(T)) != 0) {
		std::fprintf(stderr, "out of memory\n");
		std::exit(2);
	}
	owned.push_back(memory);
	return static_cast<T*>(memory);
}

template <typename T>
T* readArray(long long count)
{
	T* to = deviceArray<T>(count);
	if (count > 0 && std::fread(to, sizeof(T), (size_t) count, input) != (size_t) count) {
		std::fprintf(stderr, "short input\n");
		std::exit(2);
	}
	return to;
}

} // namespace

int main(int argc, char** argv)
{
	if (argc != 3) {
		std::fprintf(stderr, "usage: knn_launch <input> <output>\n");
		return 2;
	}
	input = std::fopen(argv[1], "rb");
	if (input == nullptr) {
		std::perror(argv[1]);
		return 2;
	}
	const int kernel = readInt();
	const uint3 grid { (unsigned) readInt(), (unsigned) readInt(), 1 };
	const uint3 block { (unsigned) readInt(), 1, 1 };
	const int sharedBytes = readInt();
	const bool yieldAtomics = readInt() != 0;
	const long long seed = readLong();
	float* outScores = nullptr;
	int* outIds = nullptr;
	long long outEntries = 0;
	std::function<void()> body;
	if (kernel == 1) {
		const int n = readInt();
		const int dim = readInt();
		const int count = readInt();
		const int k = readInt();
		const int rowsPerBlock = readInt();
		const int groupQueries = readInt();
		outEntries = readInt();
		const float* vectors = readArray<float>((long long) n * dim);
		const float* queries = readArray<float>((long long) count * dim);
		body = [&, n, dim, count, k, rowsPerBlock, groupQueries, vectors, queries] {
			knn_fused(n, dim, count, k, rowsPerBlock, groupQueries, vectors, queries, outScores, outIds);
		};
	}
	else if (kernel == 2) {
		const int m = readInt();
		const int k = readInt();
		const int useIds = readInt();
		const int idBase = readInt();
		const int rows = readInt();
		outEntries = readInt();
		const float* inScores = readArray<float>((long long) rows * m);
		const int* inIds = useIds ? readArray<int>((long long) rows * m) : nullptr;
		body = [&, m, k, useIds, idBase, inScores, inIds] {
			knn_topk(m, k, useIds, idBase, inScores, inIds, outScores, outIds);
		};
	}
	else if (kernel == 3) {
		const int runs = readInt();
		const int k = readInt();
		const int queries = readInt();
		outEntries = readInt();
		const long long entries = (long long) queries * runs * k;
		const float* inScores = readArray<float>(entries);
		const int* inIds = readArray<int>(entries);
		body = [&, runs, k, inScores, inIds] { knn_merge(runs, k, inScores, inIds, outScores, outIds); };
	}
	else {
		std::fprintf(stderr, "unknown kernel %d\n", kernel);
		return 2;
	}
	outScores = deviceArray<float>(outEntries);
	outIds = deviceArray<int>(outEntries);
	std::fill(outScores, outScores + outEntries, __int_as_float(0x7fbadbad));
	std::fill(outIds, outIds + outEntries, -2);
	emu::launch(grid, block, (size_t) sharedBytes, (uint64_t) seed, yieldAtomics, body);
	std::fclose(input);
	for (void* memory : owned) {
		if (memory != outScores && memory != outIds) {
			std::free(memory);
		}
	}
	FILE* output = std::fopen(argv[2], "wb");
	if (output == nullptr || std::fwrite(outScores, sizeof(float), (size_t) outEntries, output) != (size_t) outEntries
			|| std::fwrite(outIds, sizeof(int), (size_t) outEntries, output) != (size_t) outEntries
			|| std::fclose(output) != 0) {
		std::perror(argv[2]);
		return 2;
	}
	std::free(outScores);
	std::free(outIds);
	return 0;
}
