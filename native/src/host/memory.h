// Where a tensor's bytes live: a device's memory (device/device.h: a Device is its memory,
// the host device or a GPU); it stands for the device in the engine's counters too. Each
// memory counts its live allocations (leak tests read the counts) and enforces its own limit:
// an out-of-memory error names the request and the limit.
//
// Freed blocks go back to the memory's pool, not to the device: a block of the same rounded
// size is handed out again, so a run repeated with the same shapes allocates nothing on the
// device (the caching model of PyTorch's device allocator). reservePool() fills the pool at
// prepare from the graph's memory plan with one device allocation; trimPool() gives the
// unused blocks back (a session's end, or an allocation that would pass the limit).
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace hcsp {

struct AllocatorStats {
  int64_t liveTensors;
  int64_t liveBytes;
  int64_t peakBytes;
  int64_t allocations;
  int64_t limitBytes;  // 0 = no limit
  /** bytes held in the pool for reuse (not live) */
  int64_t pooledBytes;
};

/** What the device did since the memory was made: the engine's counters (a run reports their difference). */
struct DeviceCounters {
  int64_t kernelLaunches;
  int64_t hostSyncs;
  int64_t deviceAllocations;
  int64_t deviceFrees;
  int64_t memsets;
  int64_t copiesToDevice;
  int64_t bytesToDevice;
  int64_t copiesFromDevice;
  int64_t bytesFromDevice;
};

class Memory {
 public:
  virtual ~Memory() = default;
  /** for messages: "host", "hip:0", "cuda:0", "emulated" */
  virtual std::string name() const = 0;
  /** whether the bytes can be read in place by host code */
  virtual bool hostVisible() const = 0;

  /** counted and limited, from the pool when it holds a block of this size; zero bytes gives nullptr */
  void* allocate(size_t bytes, const std::string& what);
  /** back to the pool, or (toDevice) to the device at once: a weight's bytes no run will reuse */
  void release(void* p, size_t bytes, bool toDevice = false);
  /** one device allocation carved into blocks of these sizes, put in the pool */
  void reservePool(const std::vector<size_t>& blockBytes);
  /** gives the pool's unused blocks back to the device (a reserved region once all its blocks are back) */
  void trimPool();
  /** counts memory held outside tensors (scratch, packed panels) against the same limit */
  void reserve(int64_t bytes, const std::string& what);
  void unreserve(int64_t bytes);

  /** host -> device, device -> host, zeros: counted, then the device's own copy */
  void copyIn(void* dst, const void* src, size_t bytes);
  void copyOut(void* dst, const void* src, size_t bytes);
  void fillZero(void* dst, size_t bytes);
  /** 0xFF bytes (NaN in bf16 and fp32, -1 in int32), not counted: HCSP_POISON_UNINITIALIZED's fill */
  void fillPoison(void* dst, size_t bytes);

  AllocatorStats stats() const;
  /** 0 removes the limit */
  void setLimit(int64_t bytes);

  DeviceCounters counters() const;
  /**
   * A dry run (a session's warm-up, engine/program.h): kernels are not launched, zeros not
   * written, vendor GEMMs and collectives not called, but every tensor a run makes is allocated
   * and freed as the run would, so the pool ends up holding each block a run takes (its
   * kernels' scratch included) before the first run. Set and cleared by the queue's worker.
   */
  void setDryRun(bool on) { dryRun_.store(on, std::memory_order_relaxed); }
  bool dryRun() const { return dryRun_.load(std::memory_order_relaxed); }
  void countLaunch() { launches_.fetch_add(1, std::memory_order_relaxed); }
  void countSync() { syncs_.fetch_add(1, std::memory_order_relaxed); }
  /** a host -> device copy made outside copyIn (the weight loader's asynchronous copies), counted as copyIn counts */
  void countCopyIn(size_t bytes) {
    copiesIn_.fetch_add(1, std::memory_order_relaxed);
    bytesIn_.fetch_add(static_cast<int64_t>(bytes), std::memory_order_relaxed);
  }

 protected:
  virtual void* rawAllocate(size_t bytes) = 0;
  virtual void rawRelease(void* p) = 0;
  virtual void rawCopyIn(void* dst, const void* src, size_t bytes) = 0;
  virtual void rawCopyOut(void* dst, const void* src, size_t bytes) = 0;
  virtual void rawFill(void* dst, uint8_t byte, size_t bytes) = 0;

 private:
  /** the pool's block size for a request: whole 256-byte units (vector loads, no false sharing) */
  static size_t blockSize(size_t bytes) { return (bytes + 255) / 256 * 256; }
  /** frees the pool's unused blocks; called with mutex_ held */
  void trimLocked();

  struct Region {
    void* base;
    int64_t outstanding;  // its blocks handed out
  };
  mutable std::mutex mutex_;
  AllocatorStats stats_{0, 0, 0, 0, 0, 0};
  std::map<size_t, std::vector<void*>> free_;
  /** a carved block's region */
  std::unordered_map<void*, size_t> regionOf_;
  std::vector<Region> regions_;
  std::atomic<int64_t> launches_{0}, syncs_{0}, deviceAllocations_{0}, deviceFrees_{0}, memsets_{0};
  std::atomic<int64_t> copiesIn_{0}, bytesIn_{0}, copiesOut_{0}, bytesOut_{0};
  std::atomic<bool> dryRun_{false};
};

/**
 * HCSP_POISON_UNINITIALIZED=1: tensors made without zeros are filled with 0xFF bytes instead of
 * holding whatever their pooled block held, so a kernel that reads an output it did not write
 * (or leaves part of it unwritten) changes the results: the tests' check that no kernel relies
 * on memory it was not given. Read once, at the first allocation.
 */
bool poisonUninitialized();

/** the host device (host/host_device.h) as its memory */
const std::shared_ptr<Memory>& hostMemory();

}  // namespace hcsp
