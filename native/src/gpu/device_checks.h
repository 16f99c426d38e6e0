// The checks a GPU op's kernels make on data (an embedding id outside the vocabulary, a NaN QSA
// block score, a malformed QSA selection), kept on the device: an op asks for slots, its check
// kernel lowers them where it finds a failure (kernels/checks.h), and the op goes on without
// waiting (the kernels that follow skip what they cannot read safely). At the run's sync, after
// the stream's, the device's slots are read back once (one copy per 512 slots; none when
// nothing was checked) and the first failing check, in queue order (the order the queue's one
// worker registered them), raises the host kernels' message, named by its node's label. The
// slots come from the device's pool and go back to it at that sync: a repeated run allocates
// nothing.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

namespace hcsp::gpu {

class GpuRuntime;

class DeviceChecks {
 public:
  /** throws the check's error (the host kernel's message) from its slots' words */
  using Raise = std::function<void(const uint64_t* words)>;

  /**
   * `slots` cleared slots for a check of op `op` over `positions` positions, in the running
   * node's name (engine::ExecQueue::runningLabel); `raise` turns the words of a failed check
   * into its error
   */
  unsigned long long* add(GpuRuntime& rt, const std::string& op, int64_t positions, int slots, Raise raise);
  /**
   * After the stream's sync: reads the slots, gives them back and forgets the checks, then
   * raises the first failed check's error ("label: op: message"), if any.
   */
  void raiseFirst(GpuRuntime& rt);
  /** forgets the checks unread, their slots back to the pool (a failed stream; a device going away) */
  void drop(GpuRuntime& rt);

 private:
  static constexpr size_t kSlotsPerBlock = 512;
  struct Block {
    unsigned long long* slots;
    size_t used;
  };
  struct Check {
    std::string label;
    std::string op;
    size_t block;
    size_t offset;
    Raise raise;
  };
  static void release(GpuRuntime& rt, std::vector<Block>& blocks);

  std::mutex mutex_;
  std::vector<Block> blocks_;
  std::vector<Check> checks_;
};

/** a failed slot's position and detail */
inline int64_t checkPosition(uint64_t word) { return static_cast<int64_t>(word >> 32); }
inline int32_t checkDetail(uint64_t word) { return static_cast<int32_t>(static_cast<uint32_t>(word)); }

}  // namespace hcsp::gpu
