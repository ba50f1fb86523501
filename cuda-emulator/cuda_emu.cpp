// The scheduler of cuda_emu.h (see there).
#include "cuda_emu.h"

#include <algorithm>
#include <random>
#include <string>

uint3 blockIdx;
uint3 gridDim;
uint3 blockDim;

namespace emu {

Fiber* current = nullptr;

namespace {

ucontext_t scheduler;
std::vector<Fiber> fibers;
const std::function<void()>* kernelBody = nullptr;
void* shared = nullptr;
bool atomicsYield = false;
#ifdef EMU_ASAN
void* schedulerFakeStack = nullptr;
const void* schedulerStackBottom = nullptr;
size_t schedulerStackSize = 0;
#endif

const char* stateName(State s)
{
	switch (s) {
	case State::Runnable:
		return "running";
	case State::Block:
		return "__syncthreads";
	case State::Warp:
		return "warp sync";
	case State::Exited:
		return "exited";
	}
	return "?";
}

[[noreturn]] void failWith(const std::string& what)
{
	std::fprintf(stderr, "EMULATOR FAILURE: %s\n  block (%u, %u, %u)\n", what.c_str(), blockIdx.x, blockIdx.y, blockIdx.z);
	std::fflush(stderr);
	std::_Exit(3);
}

std::string hex(unsigned v)
{
	char text[16];
	std::snprintf(text, sizeof text, "0x%08x", v);
	return text;
}

std::string where(const Fiber& f)
{
	return "thread " + std::to_string(f.tid.x) + " " + stateName(f.state)
			+ ((f.state == State::Block || f.state == State::Warp) ? " at line " + std::to_string(f.line) : "");
}

void trampoline()
{
#ifdef EMU_ASAN
	__sanitizer_finish_switch_fiber(nullptr, &schedulerStackBottom, &schedulerStackSize);
#endif
	(*kernelBody)();
	current->state = State::Exited;
#ifdef EMU_ASAN
	__sanitizer_start_switch_fiber(nullptr, schedulerStackBottom, schedulerStackSize);
#endif
	setcontext(&scheduler);
}

void switchTo(Fiber& f)
{
	current = &f;
#ifdef EMU_ASAN
	__sanitizer_start_switch_fiber(&schedulerFakeStack, f.stack, f.stackSize);
#endif
	swapcontext(&scheduler, &f.context);
#ifdef EMU_ASAN
	__sanitizer_finish_switch_fiber(schedulerFakeStack, nullptr, nullptr);
#endif
	current = nullptr;
}

/** Releases a whole block waiting at one __syncthreads*, if that is where every thread is. */
bool releaseBlock()
{
	int waiting = 0;
	int line = -1;
	int any = 0;
	for (Fiber& f : fibers) {
		if (f.state == State::Runnable || f.state == State::Warp) {
			return false;
		}
		if (f.state == State::Block) {
			waiting++;
			if (line >= 0 && f.line != line) {
				std::string all;
				for (Fiber& g : fibers) {
					if (g.state == State::Block && g.line != line) {
						all = where(g);
						break;
					}
				}
				failWith("__syncthreads reached at different lines: line " + std::to_string(line) + " and " + all);
			}
			line = f.line;
			any |= (f.predicate != 0);
		}
	}
	if (waiting == 0) {
		return false;
	}
	if (waiting != (int) fibers.size()) {
		failWith("__syncthreads at line " + std::to_string(line) + " reached by " + std::to_string(waiting) + " of "
				+ std::to_string(fibers.size()) + " threads (the others exited)");
	}
	for (Fiber& f : fibers) {
		f.blockResult = any;
		f.state = State::Runnable;
	}
	return true;
}

/** Completes the warp operations whose named lanes have all arrived at the same line with the same mask. */
bool releaseWarps()
{
	bool released = false;
	const int warps = (int) ((fibers.size() + 31) / 32);
	for (int w = 0; w < warps; w++) {
		for (int l = 0; l < 32; l++) {
			const int i = 32 * w + l;
			if (i >= (int) fibers.size() || fibers[i].state != State::Warp) {
				continue;
			}
			const Fiber& leader = fibers[i];
			bool complete = true;
			for (int m = 0; m < 32; m++) {
				if ((leader.mask & (1u << m)) == 0) {
					continue;
				}
				const int j = 32 * w + m;
				if (j >= (int) fibers.size()) {
					failWith("a warp operation at line " + std::to_string(leader.line) + " names lane " + std::to_string(m)
							+ ", which does not exist in a block of " + std::to_string(fibers.size()) + " threads");
				}
				const Fiber& other = fibers[j];
				if (other.state == State::Exited) {
					failWith("a warp operation at line " + std::to_string(leader.line) + " names " + where(other));
				}
				if (other.state == State::Warp && (other.line != leader.line || other.mask != leader.mask)) {
					failWith("lanes of a warp meet at different warp operations: " + where(leader) + " mask "
							+ hex(leader.mask) + ", " + where(other) + " mask " + hex(other.mask));
				}
				if (other.state != State::Warp) {
					complete = false;
				}
			}
			if (!complete) {
				continue;
			}
			for (int m = 0; m < 32; m++) {
				if ((leader.mask & (1u << m)) == 0) {
					continue;
				}
				Fiber& f = fibers[32 * w + m];
				if (f.source >= 0 && (leader.mask & (1u << f.source)) == 0) {
					failWith("a shuffle at line " + std::to_string(f.line) + " reads lane " + std::to_string(f.source)
							+ ", which its mask does not name");
				}
				f.result = (f.source >= 0) ? fibers[32 * w + f.source].value : f.value;
			}
			for (int m = 0; m < 32; m++) {
				if ((leader.mask & (1u << m)) != 0) {
					fibers[32 * w + m].state = State::Runnable;
				}
			}
			released = true;
		}
	}
	return released;
}

void runBlock(std::mt19937_64& random)
{
	for (Fiber& f : fibers) {
		f.state = State::Runnable;
		getcontext(&f.context);
		f.context.uc_stack.ss_sp = f.stack;
		f.context.uc_stack.ss_size = f.stackSize;
		f.context.uc_link = nullptr;
		makecontext(&f.context, trampoline, 0);
	}
	std::vector<int> order(fibers.size());
	for (size_t i = 0; i < order.size(); i++) {
		order[i] = (int) i;
	}
	while (true) {
		std::shuffle(order.begin(), order.end(), random);
		bool ran = false;
		for (int i : order) {
			if (fibers[i].state == State::Runnable) {
				switchTo(fibers[i]);
				ran = true;
			}
		}
		if (ran) {
			continue;
		}
		if (releaseWarps() || releaseBlock()) {
			continue;
		}
		bool allExited = true;
		for (Fiber& f : fibers) {
			allExited &= (f.state == State::Exited);
		}
		if (allExited) {
			return;
		}
		// Warp operations first: one waiting for a lane that is elsewhere is the usual cause.
		std::string states;
		int shown = 0;
		for (State kind : { State::Warp, State::Block }) {
			for (Fiber& f : fibers) {
				if (f.state == kind && shown++ < 8) {
					states += "\n    " + where(f) + ((kind == State::Warp) ? " (mask " + hex(f.mask) + ")" : "");
				}
			}
		}
		failWith("deadlock: no thread can go on (a warp operation's mask names lanes that do not execute it, or a "
				"barrier that not every thread reaches); the first waiting:" + states);
	}
}

} // namespace

void fail(const char* what, int line)
{
	failWith(std::string(what) + (line > 0 ? " at line " + std::to_string(line) : "")
			+ (current != nullptr ? ", thread " + std::to_string(current->tid.x) : ""));
}

void yield()
{
	Fiber* f = current;
#ifdef EMU_ASAN
	void* fake = nullptr;
	__sanitizer_start_switch_fiber(&fake, schedulerStackBottom, schedulerStackSize);
#endif
	swapcontext(&f->context, &scheduler);
#ifdef EMU_ASAN
	__sanitizer_finish_switch_fiber(fake, &schedulerStackBottom, &schedulerStackSize);
#endif
	current = f;
}

void* dynamicShared()
{
	return shared;
}

bool yieldAtAtomics()
{
	return atomicsYield;
}

void launch(uint3 grid, uint3 block, size_t sharedBytes, uint64_t seed, bool yieldAtomics,
		const std::function<void()>& body)
{
	if (block.y != 1 || block.z != 1) {
		failWith("the emulator runs one-dimensional blocks");
	}
	gridDim = grid;
	blockDim = block;
	kernelBody = &body;
	atomicsYield = yieldAtomics;
	fibers.assign(block.x, Fiber());
	for (unsigned t = 0; t < block.x; t++) {
		fibers[t].tid = uint3 { t, 0, 0 };
		fibers[t].stackSize = 256 * 1024;
		fibers[t].stack = static_cast<char*>(std::malloc(fibers[t].stackSize));
	}
	std::mt19937_64 random(seed);
	for (unsigned z = 0; z < grid.z; z++) {
		for (unsigned y = 0; y < grid.y; y++) {
			for (unsigned x = 0; x < grid.x; x++) {
				blockIdx = uint3 { x, y, z };
				// Exactly the bytes asked for (ASan catches an access past them), filled with garbage: a
				// kernel must write its shared memory before it reads it.
				void* memory = nullptr;
				if (posix_memalign(&memory, 16, sharedBytes > 0 ? sharedBytes : 1) != 0) {
					failWith("out of host memory for shared memory");
				}
				shared = memory;
				unsigned char* bytes = static_cast<unsigned char*>(memory);
				for (size_t i = 0; i < sharedBytes; i++) {
					bytes[i] = (unsigned char) random();
				}
				runBlock(random);
				std::free(memory);
				shared = nullptr;
			}
		}
	}
	for (Fiber& f : fibers) {
		std::free(f.stack);
	}
	fibers.clear();
}

} // namespace emu
