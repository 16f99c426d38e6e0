// How the emulated device runs a block launch (vendor.h's block kernels) faithfully on the
// host: every thread of a block runs the kernel body, a barrier waits for every thread of the
// block, and each block in flight has its own shared memory.
//
// Each block runs on one pool thread as one fiber per GPU thread (emulated_fiber.h; HIP-CPU
// runs barriers the same way, but it is not packaged). A fiber runs until it reaches a barrier
// or returns, then the next one runs; once all of the block's fibers wait at the same barrier,
// they all go on. Fibers rather than a thread per GPU thread: a block's 64-256 threads would
// each need an OS thread and every barrier a wake-up of all of them through the kernel (on two
// cores, a context switch per thread per barrier), where a fiber switch is tens of nanoseconds
// in user space. Shared arrays are thread_local (vendor.h's HCSP_SHARED):
// a pool thread runs one block at a time and its fibers share its thread-local storage, so they
// are exactly per block.
//
// Rounds alternate the fibers' order (0..N-1, then N-1..0), so a kernel that reads another
// thread's shared value without a barrier between the write and the read reads a stale value in
// one of them, whichever thread writes: the emulated device then gives other bits than the
// reference, as a GPU might.
#pragma once
#include <cstdint>
#include <functional>

namespace hcsp::gpu {

/**
 * Runs `body` (kernel `kernel` with its arguments) as `blocks` blocks of `threads` threads,
 * blocks spread over the default pool. Fails (ErrorKind::Runtime, naming the kernel, the block
 * and the barriers' lines) where the threads of a block do not all reach the same barrier.
 */
void runBlocksEmulated(const char* kernel, int64_t blocks, int threads, const std::function<void()>& body);

}  // namespace hcsp::gpu
