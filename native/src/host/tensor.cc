#include "tensor.h"

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
    case DType::BF16:
      return "bf16";
    case DType::F32:
      return "f32";
    case DType::I32:
      return "i32";
    case DType::FP8E4M3FN:
      return "fp8e4m3fn";
    case DType::FP8E4M3FNUZ:
      return "fp8e4m3fnuz";
  }
  return "?";
}

size_t dtypeBytes(DType d) {
  switch (d) {
    case DType::BF16:
      return 2;
    case DType::F32:
    case DType::I32:
      return 4;
    case DType::FP8E4M3FN:
    case DType::FP8E4M3FNUZ:
      return 1;
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
  // at most 2^60 elements (8 bytes each still fit an int64), checked over the non-zero
  // dimensions: a product that wraps would give a tensor far smaller than its shape
  constexpr int64_t MAX_ELEMENTS = int64_t{1} << 60;
  int64_t n = 1, nonZero = 1;
  for (int64_t d : s) {
    if (d < 0) fail(ErrorKind::Shape, "negative dimension in shape " + shapeStr(s));
    if (d > 0 && nonZero > MAX_ELEMENTS / d) fail(ErrorKind::Shape, "shape " + shapeStr(s) + " has more than 2^60 elements");
    if (d > 0) nonZero *= d;
    n *= d;
  }
  return n;
}

Tensor::Tensor(DType dtype, Shape shape, std::shared_ptr<Memory> memory, Init init)
    : memory_(std::move(memory)), dtype_(dtype), shape_(std::move(shape)), numel_(hcsp::numel(shape_)), data_(nullptr) {
  data_ = memory_->allocate(bytes(), std::string("a ") + dtypeName(dtype_) + shapeStr(shape_) + " tensor");
  if (!data_) return;
  try {
    if (init == Init::Zero)
      memory_->fillZero(data_, bytes());
    else if (poisonUninitialized())
      memory_->fillPoison(data_, bytes());
  } catch (...) {
    // no destructor runs for a constructor that throws: give the bytes back here
    memory_->release(data_, bytes());
    throw;
  }
}

Tensor::~Tensor() {
  cache.reset();
  memory_->release(data_, released() ? 0 : bytes());
}

void Tensor::releaseData() {
  if (released()) return;
  // the bytes go back (liveBytes drops by them); a zero-byte allocation keeps the handle
  // counted in liveTensors until the destructor's release (it also counts as an allocation)
  memory_->allocate(0, "a released tensor's handle");
  memory_->release(data_, bytes(), true);
  data_ = nullptr;
  released_.store(true, std::memory_order_release);
}

AllocatorStats allocatorStats() { return hostMemory()->stats(); }

void setMemoryLimit(int64_t bytes) { hostMemory()->setLimit(bytes); }

void reserveScratch(int64_t bytes) { hostMemory()->reserve(bytes, "kernel scratch"); }
void releaseScratch(int64_t bytes) { hostMemory()->unreserve(bytes); }

}  // namespace hcsp
