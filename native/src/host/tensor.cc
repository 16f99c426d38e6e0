#include "tensor.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "errors.h"

namespace hcsp {

DType parseDType(const std::string& name) {
  if (name == "bf16") return DType::BF16;
  if (name == "f32") return DType::F32;
  if (name == "i32") return DType::I32;
  if (name == "fp8e4m3fn") return DType::FP8E4M3FN;
  if (name == "fp8e4m3fnuz") return DType::FP8E4M3FNUZ;
  fail(ErrorKind::DType, "unknown dtype '" + name + "' (expected bf16, f32, i32, fp8e4m3fn or fp8e4m3fnuz)");
}

const char* dtypeName(DType d) {
  switch (d) {
    case DType::BF16: return "bf16";
    case DType::F32: return "f32";
    case DType::I32: return "i32";
    case DType::FP8E4M3FN: return "fp8e4m3fn";
    case DType::FP8E4M3FNUZ: return "fp8e4m3fnuz";
  }
  return "?";
}

size_t dtypeBytes(DType d) {
  switch (d) {
    case DType::BF16: return 2;
    case DType::F32:
    case DType::I32: return 4;
    case DType::FP8E4M3FN:
    case DType::FP8E4M3FNUZ: return 1;
  }
  return 1;
}

bool isFp8(DType d) { return d == DType::FP8E4M3FN || d == DType::FP8E4M3FNUZ; }

std::string shapeStr(const Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); i++) out += (i ? "," : "") + std::to_string(s[i]);
  return out + "]";
}

int64_t numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) {
    if (d < 0) fail(ErrorKind::Shape, "negative dimension in shape " + shapeStr(s));
    n *= d;
  }
  return n;
}

namespace {
std::mutex allocMutex;
AllocatorStats stats{0, 0, 0, 0, 0};

void reserve(int64_t bytes) {
  std::lock_guard<std::mutex> lock(allocMutex);
  if (stats.limitBytes > 0 && stats.liveBytes + bytes > stats.limitBytes) {
    fail(ErrorKind::OutOfMemory, "host device out of memory: " + std::to_string(bytes) + " bytes requested, " + std::to_string(stats.liveBytes) +
                                     " of the limit " + std::to_string(stats.limitBytes) + " in use");
  }
  stats.liveBytes += bytes;
  if (stats.liveBytes > stats.peakBytes) stats.peakBytes = stats.liveBytes;
}

void release(int64_t bytes) {
  std::lock_guard<std::mutex> lock(allocMutex);
  stats.liveBytes -= bytes;
}
}  // namespace

Tensor::Tensor(DType dtype, Shape shape) : dtype_(dtype), shape_(std::move(shape)), numel_(hcsp::numel(shape_)), data_(nullptr) {
  const int64_t n = static_cast<int64_t>(bytes());
  reserve(n);
  // 64-byte alignment: whole cache lines, and aligned AVX-512 loads
  const size_t rounded = (static_cast<size_t>(n) + 63) / 64 * 64;
  data_ = rounded ? std::aligned_alloc(64, rounded) : nullptr;
  if (rounded && !data_) {
    release(n);
    fail(ErrorKind::OutOfMemory, "host device out of memory: the system refused " + std::to_string(n) + " bytes for a " + dtypeName(dtype_) + shapeStr(shape_) + " tensor");
  }
  if (data_) std::memset(data_, 0, rounded);
  std::lock_guard<std::mutex> lock(allocMutex);
  stats.liveTensors++;
  stats.allocations++;
}

Tensor::~Tensor() {
  cache.reset();
  std::free(data_);
  release(static_cast<int64_t>(bytes()));
  std::lock_guard<std::mutex> lock(allocMutex);
  stats.liveTensors--;
}

AllocatorStats allocatorStats() {
  std::lock_guard<std::mutex> lock(allocMutex);
  return stats;
}

void setMemoryLimit(int64_t bytes) {
  std::lock_guard<std::mutex> lock(allocMutex);
  stats.limitBytes = bytes > 0 ? bytes : 0;
}

void reserveScratch(int64_t bytes) { reserve(bytes); }
void releaseScratch(int64_t bytes) { release(bytes); }

}  // namespace hcsp
