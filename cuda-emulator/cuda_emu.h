// A strict, single-threaded emulator of the CUDA execution model, enough to run a kernel's own source
// text on the host: every CUDA thread of a block is a fiber (ucontext), switched only at the
// synchronisation points (__syncthreads*, __syncwarp, __shfl_*_sync) and, optionally, at atomics.
// It checks what the hardware would not report, or would report only as a hang or wrong numbers:
//   - a __syncthreads* not reached by every thread of the block, or reached at different lines;
//   - a *_sync warp operation whose mask does not name exactly the lanes that execute it at that line
//     (a named lane that exited, waits elsewhere or at another line; a caller outside its own mask);
//   - a deadlock (no thread can proceed);
//   - a misaligned float4 load (with -fsanitize=alignment) and out-of-bounds global or shared memory
//     (with -fsanitize=address: buffers and the dynamic shared memory are allocated at their exact size).
// Between synchronisation points the threads run one after the other, in a seeded random order per
// round, so that a result that depends on the order of threads (a race) differs between seeds.
#pragma once

// Every standard header a program of the emulator uses comes before the macros at the end of this file,
// which would otherwise rename functions inside them.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>
#include <ucontext.h>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#define EMU_ASAN 1
#endif

struct uint3 {
	unsigned x, y, z;
};

struct alignas(16) float4 {
	float x, y, z, w;
};

inline float4 make_float4(float x, float y, float z, float w)
{
	return float4 { x, y, z, w };
}

using std::isfinite;
using std::isinf;
using std::isnan;

namespace emu {

[[noreturn]] void fail(const char* what, int line);

enum class State { Runnable, Block, Warp, Exited };

struct Fiber {
	ucontext_t context;
	uint3 tid;
	State state = State::Runnable;
	int line = 0;
	unsigned mask = 0;
	int predicate = 0;
	uint64_t value = 0;     // a shuffle's operand
	int source = -1;        // a shuffle's source lane (within the warp), or -1: its own value
	uint64_t result = 0;
	int blockResult = 0;
	char* stack = nullptr;
	size_t stackSize = 0;
};

extern Fiber* current;
void yield();
void* dynamicShared();
bool yieldAtAtomics();

template <typename T>
uint64_t bits(T v)
{
	static_assert(sizeof(T) <= 8, "shuffle operand");
	uint64_t b = 0;
	std::memcpy(&b, &v, sizeof(T));
	return b;
}

template <typename T>
T unbits(uint64_t b)
{
	T v;
	std::memcpy(&v, &b, sizeof(T));
	return v;
}

inline int laneOf(const Fiber* f)
{
	return (int) (f->tid.x % 32);
}

inline void checkMask(unsigned mask, int line)
{
	if ((mask & (1u << laneOf(current))) == 0) {
		fail("a thread calls a *_sync warp operation with a mask that does not name its own lane", line);
	}
}

template <typename T>
T shuffle(int line, unsigned mask, T v, int sourceLane)
{
	checkMask(mask, line);
	current->state = State::Warp;
	current->line = line;
	current->mask = mask;
	current->value = bits(v);
	current->source = sourceLane;
	yield();
	return unbits<T>(current->result);
}

template <typename T>
T shflDown(int line, unsigned mask, T v, unsigned delta, int width = 32)
{
	const int lane = laneOf(current);
	const int inSegment = lane % width;
	const int source = (inSegment + (int) delta < width) ? lane + (int) delta : -1;
	return shuffle(line, mask, v, source);
}

template <typename T>
T shflXor(int line, unsigned mask, T v, int laneMask, int width = 32)
{
	const int lane = laneOf(current);
	const int source = lane ^ laneMask;
	// Outside the caller's segment of `width` lanes: its own value (as on the device).
	return shuffle(line, mask, v, (source / width == lane / width) ? source : -1);
}

inline void syncwarp(int line, unsigned mask = 0xffffffffu)
{
	shuffle<int>(line, mask, 0, -1);
}

inline int syncthreadsOr(int line, int predicate)
{
	current->state = State::Block;
	current->line = line;
	current->predicate = predicate;
	yield();
	return current->blockResult;
}

inline void syncthreads(int line)
{
	syncthreadsOr(line, 0);
}

template <typename T>
T atomicAddAt(T* address, T v)
{
	T old = *address;
	*address = old + v;
	if (yieldAtAtomics()) {
		yield(); // stays runnable: another thread may run before this one goes on
	}
	return old;
}

/** Runs a grid of blocks, one after the other; `body` is the kernel call. Fails on any violation. */
void launch(uint3 grid, uint3 block, size_t sharedBytes, uint64_t seed, bool atomicsYield,
		const std::function<void()>& body);

} // namespace emu

extern uint3 blockIdx;
extern uint3 gridDim;
extern uint3 blockDim;

#define threadIdx (emu::current->tid)
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __syncthreads() emu::syncthreads(__LINE__)
#define __syncthreads_or(p) emu::syncthreadsOr(__LINE__, (p))
#define __syncwarp(...) emu::syncwarp(__LINE__, ##__VA_ARGS__)
#define __shfl_down_sync(...) emu::shflDown(__LINE__, __VA_ARGS__)
#define __shfl_xor_sync(...) emu::shflXor(__LINE__, __VA_ARGS__)
#define __trap() emu::fail("__trap()", __LINE__)

inline int atomicAdd(int* address, int v)
{
	return emu::atomicAddAt(address, v);
}

template <typename T>
inline T __ldg(const T* p)
{
	if (reinterpret_cast<uintptr_t>(p) % alignof(T) != 0) {
		emu::fail("misaligned __ldg (a vector load from an address not aligned to its size)", 0);
	}
	return *p;
}

inline float __int_as_float(int i)
{
	float f;
	std::memcpy(&f, &i, sizeof f);
	return f;
}

inline int min(int a, int b)
{
	return (a < b) ? a : b;
}

inline long long min(long long a, long long b)
{
	return (a < b) ? a : b;
}

inline int max(int a, int b)
{
	return (a > b) ? a : b;
}

inline long long max(long long a, long long b)
{
	return (a > b) ? a : b;
}

// ---- Arithmetic as the GPU does it, where the host's C library does it differently --------------------
// Kernels are compiled for the host with -ffp-contract=off: no a * b + c is fused unless the source says
// fmaf, as with nvcc -fmad=false. +, -, *, /, sqrt, fma, fmod, rint, floor, ceil, trunc, round and
// copysign give the same bits on the host as on the device (IEEE 754, no flush to zero). NaN results do
// not: the device's float NaN is 0x7fffffff, the host's 0xffc00000 (IEEE 754 leaves it open).
// Transcendental functions (expf, logf, ...) are the host's, which differ from the device's by a few ulps.
namespace emu {

/**
 * PTX min/max (fminf, fmaxf, fmin, fmax compile to them): a NaN operand is ignored (NaN only when both
 * are), and -0.0 is less than +0.0 (PTX ISA, "Floating Point Instructions: min"). The C library leaves
 * fmin(-0.0, +0.0) open, and glibc on x86 returns its second operand (minss), +0.0.
 */
template <typename T>
inline T gpuMin(T a, T b)
{
	if (std::isnan(a)) {
		return b;
	}
	if (std::isnan(b)) {
		return a;
	}
	if (a == b) {
		return std::signbit(a) ? a : b;
	}
	return (a < b) ? a : b;
}

template <typename T>
inline T gpuMax(T a, T b)
{
	if (std::isnan(a)) {
		return b;
	}
	if (std::isnan(b)) {
		return a;
	}
	if (a == b) {
		return std::signbit(a) ? b : a;
	}
	return (a > b) ? a : b;
}

/**
 * cvt.rzi from floating point to an integer (the __float2int_rz family): toward zero, clamped to the
 * integer's range; NaN gives 0 from f32 to s32 and the most negative value otherwise (PTX ISA, "cvt").
 * On x86 an out-of-range conversion gives the most negative value, and C leaves it undefined.
 */
template <typename I, typename F>
inline I gpuConvert(F x, bool nanIsZero)
{
	constexpr double limit = (sizeof(I) == 4) ? 2147483648.0 : 9223372036854775808.0;
	if (std::isnan(x)) {
		return nanIsZero ? 0 : std::numeric_limits<I>::min();
	}
	if ((double) x >= limit) {
		return std::numeric_limits<I>::max();
	}
	if ((double) x < -limit) {
		return std::numeric_limits<I>::min();
	}
	return (I) x;
}

} // namespace emu

inline int __float2int_rz(float x)
{
	return emu::gpuConvert<int>(x, true);
}

inline long long __float2ll_rz(float x)
{
	return emu::gpuConvert<long long>(x, false);
}

inline int __double2int_rz(double x)
{
	return emu::gpuConvert<int>(x, false);
}

inline long long __double2ll_rz(double x)
{
	return emu::gpuConvert<long long>(x, false);
}

#define fminf(a, b) emu::gpuMin<float>((a), (b))
#define fmaxf(a, b) emu::gpuMax<float>((a), (b))
#define fmin(a, b) emu::gpuMin<double>((a), (b))
#define fmax(a, b) emu::gpuMax<double>((a), (b))
