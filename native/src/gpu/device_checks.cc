#include "device_checks.h"

#include "../engine/exec_queue.h"
#include "../host/errors.h"
#include "gpu_runtime.h"
#include "kernels/checks.h"

namespace hcsp::gpu {

namespace {

/** the op's name in front, once, as the queue names a host kernel's error (run_worker.cc) */
std::string named(const std::string& op, const std::string& message) {
  return message.rfind(op + ":", 0) == 0 || message.rfind(op + " ", 0) == 0 ? message : op + ": " + message;
}

}  // namespace

unsigned long long* DeviceChecks::add(GpuRuntime& rt, const std::string& op, int64_t positions, int slots, Raise raise) {
  // a position is the high half of a slot's word; all ones is the clear word
  if (positions >= int64_t{0xffffffff}) fail(ErrorKind::Size, op + ": " + std::to_string(positions) + " positions to check on the device, at most 4294967294");
  std::lock_guard<std::mutex> lock(mutex_);
  if (blocks_.empty() || blocks_.back().used + static_cast<size_t>(slots) > kSlotsPerBlock) {
    auto* p = static_cast<unsigned long long*>(rt.allocate(kSlotsPerBlock * sizeof(unsigned long long), "the device checks' slots"));
    blocks_.push_back(Block{p, 0});
    HCSP_LAUNCH(rt, hcsp_checks_clear, static_cast<int64_t>(kSlotsPerBlock), p, static_cast<int64_t>(kSlotsPerBlock));
  }
  Block& b = blocks_.back();
  unsigned long long* mine = b.slots + b.used;
  // a dry run takes the slots a run takes (the pool then holds their blocks) but registers no
  // check: its clear kernel was not launched, and the sync reads only registered slots
  if (!rt.dryRun()) checks_.push_back(Check{engine::ExecQueue::runningLabel(), op, blocks_.size() - 1, b.used, std::move(raise)});
  b.used += static_cast<size_t>(slots);
  return mine;
}

void DeviceChecks::release(GpuRuntime& rt, std::vector<Block>& blocks) {
  for (const Block& b : blocks) rt.release(b.slots, kSlotsPerBlock * sizeof(unsigned long long));
  blocks.clear();
}

void DeviceChecks::drop(GpuRuntime& rt) {
  std::lock_guard<std::mutex> lock(mutex_);
  release(rt, blocks_);
  checks_.clear();
}

void DeviceChecks::raiseFirst(GpuRuntime& rt) {
  std::vector<Block> blocks;
  std::vector<Check> checks;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    blocks.swap(blocks_);
    checks.swap(checks_);
  }
  if (checks.empty()) {
    // slots taken with no check to read (a dry run's): back to the pool
    release(rt, blocks);
    return;
  }
  std::vector<std::vector<uint64_t>> words(blocks.size());
  try {
    for (size_t i = 0; i < blocks.size(); i++) {
      words[i].resize(blocks[i].used);
      rt.copyOut(words[i].data(), blocks[i].slots, blocks[i].used * sizeof(uint64_t));
    }
  } catch (...) {
    release(rt, blocks);
    throw;
  }
  release(rt, blocks);
  for (const Check& c : checks) {
    const uint64_t* w = words[c.block].data() + c.offset;
    if (w[0] == HCSP_CHECK_CLEAR) continue;
    const std::string label = c.label.empty() ? "" : c.label + ": ";
    try {
      c.raise(w);
    } catch (const Error& e) {
      throw Error(e.kind(), label + named(c.op, e.what()));
    }
    fail(ErrorKind::Runtime, label + named(c.op, "a device check failed without an error (position " + std::to_string(checkPosition(w[0])) + ")"));
  }
}

}  // namespace hcsp::gpu
