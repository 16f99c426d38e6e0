// Test probe of the emulated device's block launches (native/src/gpu/emulated_blocks.h;
// packages/backend-rocm/src/emulatedBlocks.test.ts compiles it with emulated_blocks.cc,
// emulated_fiber.cc and the thread pool, and runs it): block kernels written with vendor.h's
// macros, as a .cu file is, each run as a block launch; one line per case: "<case>: <result>",
// the result what the kernel computed or the launch's error.
#include <cstdint>
#include <cstdio>
#include <exception>
#include <functional>
#include <string>
#include <vector>

#include "gpu/emulated_blocks.h"
#include "gpu/vendor.h"

namespace hcsp::gpu {
// (emulated_runtime.cc's, which the probe does not link)
thread_local int64_t emulatedThreadId = 0;
thread_local int64_t emulatedThreadCount = 1;
}  // namespace hcsp::gpu

/** every thread writes its ids: the block's, the block size, the grid's, the global thread id and count */
HCSP_GLOBAL void probe_ids(int64_t* out) {
  int64_t* o = out + 6 * HCSP_THREAD_ID();
  o[0] = HCSP_BLOCK_ID();
  o[1] = HCSP_BLOCK_THREAD();
  o[2] = HCSP_BLOCK_THREADS();
  o[3] = HCSP_BLOCK_COUNT();
  o[4] = HCSP_THREAD_ID();
  o[5] = HCSP_THREAD_COUNT();
}

/**
 * out[t] = thread t - 1's value (thread 0: its own), exchanged through shared memory. `synced`:
 * with a barrier between the writes and the reads. Without it, run in thread order every
 * neighbour would have written already; the emulated device's rounds alternate their order, so
 * in one of them the reads come first
 */
HCSP_GLOBAL void probe_neighbour(int* out, int synced) {
  HCSP_SHARED(int, values, 256);
  const int t = HCSP_BLOCK_THREAD(), n = HCSP_BLOCK_THREADS();
  const int base = static_cast<int>(HCSP_BLOCK_ID()) * n;
  // a first barrier: the exchange below runs in a later round than the block's first
  HCSP_BARRIER();
  values[t] = base + t + 1;
  if (synced) HCSP_BARRIER();
  out[base + t] = values[t > 0 ? t - 1 : t];
  HCSP_BARRIER();
  // what the next block on this thread would read if it did not wait either
  values[t] = -1;
}

/** threads 5 and up return without the barrier the others wait at */
HCSP_GLOBAL void probe_returns(int* out) {
  if (HCSP_BLOCK_THREAD() < 5) HCSP_BARRIER();
  out[0] = 1;
}

/** threads below 5 wait at one barrier, the others at another */
HCSP_GLOBAL void probe_two_barriers(int* out) {
  if (HCSP_BLOCK_THREAD() < 5) {
    HCSP_BARRIER();
  } else {
    HCSP_BARRIER();
  }
  out[0] = 1;
}

/** a barrier in a kernel run outside a block launch */
HCSP_GLOBAL void probe_barrier(int* out) {
  HCSP_BARRIER();
  out[0] = 1;
}

namespace {

void report(const char* name, const std::function<std::string()>& run) {
  std::string result;
  try {
    result = run();
  } catch (const std::exception& e) {
    result = std::string("error: ") + e.what();
  }
  std::printf("%s: %s\n", name, result.c_str());
}

/** "right", or the first thread whose neighbour's value it did not read */
std::string neighbours(int64_t blocks, int threads, bool synced) {
  std::vector<int> out(blocks * threads, 0);
  hcsp::gpu::runBlocksEmulated("probe_neighbour", blocks, threads, [&] { probe_neighbour(out.data(), synced ? 1 : 0); });
  for (int64_t b = 0; b < blocks; b++) {
    for (int t = 0; t < threads; t++) {
      const int want = static_cast<int>(b * threads + (t > 0 ? t - 1 : t) + 1);
      if (out[b * threads + t] != want) return "block " + std::to_string(b) + " thread " + std::to_string(t) + " read " + std::to_string(out[b * threads + t]);
    }
  }
  return "right";
}

}  // namespace

int main() {
  report("ids", [] {
    const int64_t blocks = 5;
    const int threads = 192;
    std::vector<int64_t> out(6 * blocks * threads, -1);
    hcsp::gpu::runBlocksEmulated("probe_ids", blocks, threads, [&] { probe_ids(out.data()); });
    for (int64_t i = 0; i < blocks * threads; i++) {
      const int64_t* o = &out[6 * i];
      const int64_t want[6] = {i / threads, i % threads, threads, blocks, i, blocks * threads};
      for (int k = 0; k < 6; k++) {
        if (o[k] != want[k]) return "thread " + std::to_string(i) + " id " + std::to_string(k) + " is " + std::to_string(o[k]);
      }
    }
    return std::string("right");
  });
  for (const int threads : {64, 128, 256}) {
    const std::string n = std::to_string(threads);
    report(("synced " + n).c_str(), [&] { return neighbours(9, threads, true); });
    report(("unsynced " + n).c_str(), [&] { return neighbours(9, threads, false); });
  }
  int out = 0;
  report("returns", [&] {
    hcsp::gpu::runBlocksEmulated("probe_returns", 3, 64, [&] { probe_returns(&out); });
    return std::string("ran");
  });
  report("two barriers", [&] {
    hcsp::gpu::runBlocksEmulated("probe_two_barriers", 1, 128, [&] { probe_two_barriers(&out); });
    return std::string("ran");
  });
  report("outside", [&] {
    probe_barrier(&out);
    return std::string("ran");
  });
  // after the failures, launches run as before
  report("after", [] { return neighbours(4, 64, true); });
  return 0;
}
