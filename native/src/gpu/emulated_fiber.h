// The emulated device's fibers (emulated_blocks.cc runs a block's GPU threads as fibers on one
// host thread): a context that runs on a stack of its own, and the switch between two contexts.
//
// On x86-64 the switch is a few instructions (the System V callee-saved registers, MXCSR and the
// x87 control word pushed on the running stack, the stack pointers exchanged): tens of
// nanoseconds. glibc's swapcontext also saves and restores the signal mask, a system call at
// every switch (about a microsecond measured here), which a block's barriers would pay 2 x 6
// times per thread; it stays the portable way on other architectures (and on x86-64 when built
// with -DHCSP_FIBER_UCONTEXT, which its test does to run that path too).
#pragma once
#include <cstddef>

#if defined(__x86_64__) && !defined(HCSP_FIBER_UCONTEXT)
#define HCSP_FIBER_X86_64 1
#else
#include <ucontext.h>
#endif

namespace hcsp::gpu {

/** a suspended fiber, or a thread's own context while one of its fibers runs; never moved while in use */
struct FiberContext {
#if defined(HCSP_FIBER_X86_64)
  /** the stack pointer its registers were pushed below */
  void* sp = nullptr;
#else
  ucontext_t context;
#endif
};

/**
 * Makes `fiber` start entry() on the stack [stack, stack + bytes) at its first resume. entry
 * must never return: it ends by switching away for good.
 */
void fiberPrepare(FiberContext& fiber, char* stack, size_t bytes, void (*entry)());

/** saves the running context in `from` and resumes `to` (returns when something resumes `from`) */
void fiberSwitch(FiberContext& from, FiberContext& to);

}  // namespace hcsp::gpu
