#include "memory.h"

#include <cstdlib>

#include "errors.h"

namespace hcsp {

void Memory::reserve(int64_t bytes, const std::string& what) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (stats_.limitBytes > 0 && stats_.liveBytes + bytes > stats_.limitBytes) {
    fail(ErrorKind::OutOfMemory, name() + " device out of memory: " + std::to_string(bytes) + " bytes requested for " + what + ", " +
                                     std::to_string(stats_.liveBytes) + " of the limit " + std::to_string(stats_.limitBytes) + " in use");
  }
  stats_.liveBytes += bytes;
  if (stats_.liveBytes > stats_.peakBytes) stats_.peakBytes = stats_.liveBytes;
}

void Memory::unreserve(int64_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.liveBytes -= bytes;
}

void* Memory::allocate(size_t bytes, const std::string& what) {
  if (bytes == 0) {
    std::lock_guard<std::mutex> lock(mutex_);
    stats_.liveTensors++;
    stats_.allocations++;
    return nullptr;
  }
  reserve(static_cast<int64_t>(bytes), what);
  const size_t block = blockSize(bytes);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stats_.liveTensors++;
    stats_.allocations++;
    auto it = free_.find(block);
    if (it != free_.end() && !it->second.empty()) {
      void* p = it->second.back();
      it->second.pop_back();
      stats_.pooledBytes -= static_cast<int64_t>(block);
      auto r = regionOf_.find(p);
      if (r != regionOf_.end()) regions_[r->second].outstanding++;
      return p;
    }
    // what the pool holds counts against the limit too: give it back before passing it
    if (stats_.limitBytes > 0 && stats_.liveBytes + stats_.pooledBytes > stats_.limitBytes) trimLocked();
  }
  void* p = nullptr;
  try {
    try {
      p = rawAllocate(block);
    } catch (const Error& e) {
      // the device refused: once more with the pool's unused blocks given back
      if (e.kind() != ErrorKind::OutOfMemory) throw;
      trimPool();
      p = rawAllocate(block);
    }
  } catch (...) {
    std::lock_guard<std::mutex> lock(mutex_);
    stats_.liveTensors--;
    stats_.allocations--;
    stats_.liveBytes -= static_cast<int64_t>(bytes);
    throw;
  }
  deviceAllocations_.fetch_add(1, std::memory_order_relaxed);
  return p;
}

void Memory::release(void* p, size_t bytes, bool toDevice) {
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.liveTensors--;
  stats_.liveBytes -= static_cast<int64_t>(bytes);
  if (!p) return;
  if (toDevice && !regionOf_.count(p)) {
    rawRelease(p);
    deviceFrees_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  const size_t block = blockSize(bytes);
  free_[block].push_back(p);
  stats_.pooledBytes += static_cast<int64_t>(block);
  auto r = regionOf_.find(p);
  if (r != regionOf_.end()) regions_[r->second].outstanding--;
}

void Memory::reservePool(const std::vector<size_t>& blockBytes) {
  size_t total = 0;
  for (size_t b : blockBytes) total += blockSize(b);
  if (total == 0) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stats_.limitBytes > 0 && stats_.liveBytes + stats_.pooledBytes + static_cast<int64_t>(total) > stats_.limitBytes) {
      trimLocked();
      if (stats_.liveBytes + stats_.pooledBytes + static_cast<int64_t>(total) > stats_.limitBytes) {
        fail(ErrorKind::OutOfMemory, name() + " device out of memory: the memory plan's pool of " + std::to_string(total) + " bytes, with " +
                                         std::to_string(stats_.liveBytes) + " bytes in use, passes the limit " + std::to_string(stats_.limitBytes));
      }
    }
  }
  auto* base = static_cast<uint8_t*>(rawAllocate(total));
  deviceAllocations_.fetch_add(1, std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(mutex_);
  const size_t region = regions_.size();
  regions_.push_back(Region{base, 0});
  size_t offset = 0;
  for (size_t b : blockBytes) {
    const size_t block = blockSize(b);
    if (block == 0) continue;
    free_[block].push_back(base + offset);
    regionOf_[base + offset] = region;
    offset += block;
  }
  stats_.pooledBytes += static_cast<int64_t>(total);
  if (stats_.liveBytes + stats_.pooledBytes > stats_.peakBytes) stats_.peakBytes = stats_.liveBytes + stats_.pooledBytes;
}

void Memory::trimPool() {
  std::lock_guard<std::mutex> lock(mutex_);
  trimLocked();
}

void Memory::trimLocked() {
  for (auto& [block, list] : free_) {
    std::vector<void*> carved;
    for (void* p : list) {
      if (regionOf_.count(p)) {
        carved.push_back(p);
        continue;
      }
      rawRelease(p);
      deviceFrees_.fetch_add(1, std::memory_order_relaxed);
      stats_.pooledBytes -= static_cast<int64_t>(block);
    }
    list.swap(carved);
  }
  // a reserved region goes back whole, once every block carved from it is in the pool
  for (size_t r = 0; r < regions_.size(); r++) {
    Region& region = regions_[r];
    if (!region.base || region.outstanding != 0) continue;
    for (auto& [block, list] : free_) {
      std::vector<void*> kept;
      for (void* p : list) {
        auto it = regionOf_.find(p);
        if (it != regionOf_.end() && it->second == r) {
          regionOf_.erase(it);
          stats_.pooledBytes -= static_cast<int64_t>(block);
        } else {
          kept.push_back(p);
        }
      }
      list.swap(kept);
    }
    rawRelease(region.base);
    deviceFrees_.fetch_add(1, std::memory_order_relaxed);
    region.base = nullptr;
  }
}

void Memory::copyIn(void* dst, const void* src, size_t bytes) {
  copiesIn_.fetch_add(1, std::memory_order_relaxed);
  bytesIn_.fetch_add(static_cast<int64_t>(bytes), std::memory_order_relaxed);
  rawCopyIn(dst, src, bytes);
}

void Memory::copyOut(void* dst, const void* src, size_t bytes) {
  copiesOut_.fetch_add(1, std::memory_order_relaxed);
  bytesOut_.fetch_add(static_cast<int64_t>(bytes), std::memory_order_relaxed);
  rawCopyOut(dst, src, bytes);
}

void Memory::fillZero(void* dst, size_t bytes) {
  if (dryRun()) return;
  memsets_.fetch_add(1, std::memory_order_relaxed);
  rawFill(dst, 0, bytes);
}

void Memory::fillPoison(void* dst, size_t bytes) { rawFill(dst, 0xFF, bytes); }

bool poisonUninitialized() {
  static const bool on = [] {
    const char* v = std::getenv("HCSP_POISON_UNINITIALIZED");
    return v != nullptr && std::string(v) == "1";
  }();
  return on;
}

DeviceCounters Memory::counters() const {
  auto get = [](const std::atomic<int64_t>& a) { return a.load(std::memory_order_relaxed); };
  return DeviceCounters{get(launches_), get(syncs_),   get(deviceAllocations_), get(deviceFrees_), get(memsets_),
                        get(copiesIn_), get(bytesIn_), get(copiesOut_),         get(bytesOut_)};
}

AllocatorStats Memory::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

void Memory::setLimit(int64_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.limitBytes = bytes > 0 ? bytes : 0;
}

}  // namespace hcsp
