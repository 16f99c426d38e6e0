#include "panels.h"

#include <algorithm>
#include <cstdlib>
#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <tuple>

#include "../errors.h"
#include "../../numerics/bf16.h"
#include "linear.h"

namespace hcsp::gemm {

AlignedBytes::AlignedBytes(int64_t bytes) : bytes_(bytes) {
  if (bytes_ == 0) return;
  reserveScratch(bytes_);
  data_ = std::aligned_alloc(64, (static_cast<size_t>(bytes_) + 63) / 64 * 64);
  if (!data_) {
    releaseScratch(bytes_);
    fail(ErrorKind::OutOfMemory, "host device out of memory: the system refused " + std::to_string(bytes_) + " bytes of GEMM scratch");
  }
}

AlignedBytes::~AlignedBytes() {
  if (!data_) return;
  std::free(data_);
  releaseScratch(bytes_);
}

namespace {

/** element i of w as bf16 bits (fp8: through a table; every e4m3 value is a bf16) and as fp32 */
struct Decoder {
  WeightDType dtype;
  const void* w;
  uint16_t lut[256];

  Decoder(WeightDType d, const void* w) : dtype(d), w(w) {
    if (d == WeightDType::Bf16) return;
    const Fp8Format& f = d == WeightDType::Fp8E4M3FN ? E4M3FN : E4M3FNUZ;
    for (int b = 0; b < 256; b++) {
      const uint32_t bits = floatBits(fp8ToF32(static_cast<uint8_t>(b), f));
      if ((bits & 0xffffu) != 0) fail(ErrorKind::Runtime, "fp8 code " + std::to_string(b) + " does not widen to a bf16");
      lut[b] = static_cast<uint16_t>(bits >> 16);
    }
  }
  uint16_t bits(int64_t i) const { return dtype == WeightDType::Bf16 ? static_cast<const uint16_t*>(w)[i] : lut[static_cast<const uint8_t*>(w)[i]]; }
  float operator()(int64_t i) const { return bf16ToF32(bits(i)); }
};

std::shared_ptr<PackedWeight> pack(const void* w, WeightDType dtype, int64_t outF, int64_t inF, PanelGeometry g, ThreadPool& pool) {
  const Decoder dec(dtype, w);
  if (g.width == 0) {
    auto packed = std::make_shared<PackedWeight>(outF, inF, g, outF * inF);
    float* dst = packed->rowMajor.data();
    pool.parallelFor(outF, 16, [&](int64_t o0, int64_t o1) {
      for (int64_t i = o0 * inF; i < o1 * inF; i++) dst[i] = dec(i);
    });
    return packed;
  }
  const int64_t panels = (outF + g.width - 1) / g.width;
  const int64_t lastWidth = ((outF - (panels - 1) * g.width) + g.vector - 1) / g.vector * g.vector;
  auto packed = std::make_shared<PackedWeight>(outF, inF, g, ((panels - 1) * g.width + lastWidth) * inF);
  PackedWeight& pw = *packed;
  pool.parallelFor(panels, 1, [&](int64_t p0, int64_t p1) {
    constexpr int64_t KB = 256;  // k rows written per pass: the panel's lines for them stay in cache
    for (int64_t p = p0; p < p1; p++) {
      uint16_t* base = pw.bf16Panels.data() + p * g.width * inF;
      const int width = pw.width(p), valid = pw.valid(p);
      for (int64_t k0 = 0; k0 < inF; k0 += KB) {
        const int64_t k1 = std::min(inF, k0 + KB);
        for (int j = 0; j < width; j++) {
          uint16_t* dst = base + panelSlot(j, width, g);
          if (j >= valid) {
            for (int64_t k = k0; k < k1; k++) dst[k * width] = 0;  // padding lanes (+0): computed, never stored
            continue;
          }
          const int64_t src = (p * g.width + j) * inF;
          for (int64_t k = k0; k < k1; k++) dst[k * width] = dec.bits(src + k);
        }
      }
    }
  });
  return packed;
}

using Key = std::tuple<int64_t, int, int64_t, int64_t, int, int, bool>;

struct WeightCache {
  std::mutex mutex;
  std::map<Key, std::shared_ptr<const PackedWeight>> entries;
};

/** guards creating a tensor's cache (its entries have their own mutex) */
std::mutex cacheCreation;

WeightCache& cacheOf(const Tensor& owner) {
  std::lock_guard<std::mutex> lock(cacheCreation);
  // the cache is a derived form of an immutable tensor, not part of its value
  auto& slot = const_cast<Tensor&>(owner).cache;
  if (!slot) slot = std::make_shared<WeightCache>();
  return *static_cast<WeightCache*>(slot.get());
}

Key keyOf(int64_t offset, WeightDType dtype, int64_t outF, int64_t inF, PanelGeometry g) {
  return Key{offset, static_cast<int>(dtype), outF, inF, g.width, g.vector, g.paired};
}

std::string weightName(const Tensor& t) { return std::string("the weight ") + dtypeName(t.dtype()) + shapeStr(t.shape()); }

/** the exact GEMM's packed form of w [outF, inF] at offset 0, or null */
std::shared_ptr<const PackedWeight> exactForm(const Tensor& w, WeightDType dtype) {
  WeightCache& cache = cacheOf(w);
  std::lock_guard<std::mutex> lock(cache.mutex);
  auto it = cache.entries.find(keyOf(0, dtype, w.dim(0), w.dim(1), panelGeometry(gemmIsa())));
  return it == cache.entries.end() ? nullptr : it->second;
}

}  // namespace

std::shared_ptr<const PackedWeight> packedWeight(const void* w, WeightDType dtype, int64_t outF, int64_t inF, PanelGeometry geometry, const Tensor* owner,
                                                 ThreadPool& pool) {
  if (!owner) return pack(w, dtype, outF, inF, geometry, pool);
  // as integers: a released owner's raw() is null, and w is then the slice's offset
  const int64_t offset = static_cast<int64_t>(reinterpret_cast<uintptr_t>(w) - reinterpret_cast<uintptr_t>(owner->raw()));
  const Key key = keyOf(offset, dtype, outF, inF, geometry);
  WeightCache& cache = cacheOf(*owner);
  {
    std::lock_guard<std::mutex> lock(cache.mutex);
    auto it = cache.entries.find(key);
    if (it != cache.entries.end()) return it->second;
  }
  if (owner->released()) {
    fail(ErrorKind::Runtime,
         weightName(*owner) + " was released after packing for the exact GEMM; it has no " +
             (geometry.width == 0 ? std::string("row-major fp32 form (the 'blas' GEMM)")
                                  : "packed form of [" + std::to_string(outF) + "," + std::to_string(inF) + "] at byte " + std::to_string(offset)));
  }
  // packed outside the lock (other slices stay available); a concurrent packer's copy wins
  std::shared_ptr<const PackedWeight> packed = pack(w, dtype, outF, inF, geometry, pool);
  std::lock_guard<std::mutex> lock(cache.mutex);
  return cache.entries.emplace(key, std::move(packed)).first->second;
}

PackResult packForGemm(Tensor& w, GemmWeightKind kind, ThreadPool& pool) {
  const std::string what = std::string("packForGemm '") + (kind == GemmWeightKind::Linear ? "linear" : "fp8") + "'";
  if (&w.memory() != hostMemory().get())
    fail(ErrorKind::Runtime, what + ": " + weightName(w) + " is in " + w.memory().name() + " memory; only the host device's exact GEMM reads packed panels");
  if (w.rank() != 2) fail(ErrorKind::Shape, what + ": expected a 2-D weight [out, in], got " + shapeStr(w.shape()));
  const bool fp8 = isFp8(w.dtype());
  if (kind == GemmWeightKind::Linear ? w.dtype() != DType::BF16 : !fp8) {
    fail(ErrorKind::DType,
         what + ": expected a " + (kind == GemmWeightKind::Linear ? "bf16" : "fp8e4m3fn or fp8e4m3fnuz") + " weight, got " + dtypeName(w.dtype()));
  }
  const WeightDType dtype = fp8 ? fp8WeightDType(fp8FormatOfDType(w.dtype())) : WeightDType::Bf16;
  if (w.released()) {
    const auto packed = exactForm(w, dtype);
    return {packed ? packed->bytes() : 0, 0};
  }
  if (w.bytes() == 0) return {0, 0};
  const PanelGeometry g = panelGeometry(gemmIsa());
  const auto packed = packedWeight(w.raw(), dtype, w.dim(0), w.dim(1), g, &w, pool);
  {
    // no other form can be read once the bytes are gone
    WeightCache& cache = cacheOf(w);
    std::lock_guard<std::mutex> lock(cache.mutex);
    const Key keep = keyOf(0, dtype, w.dim(0), w.dim(1), g);
    for (auto it = cache.entries.begin(); it != cache.entries.end();) it = it->first == keep ? std::next(it) : cache.entries.erase(it);
  }
  const int64_t bytes = static_cast<int64_t>(w.bytes());
  w.releaseData();
#if defined(__GLIBC__)
  // The bytes were likely carved from the uploading thread's heap (glibc serves blocks up to
  // its dynamic mmap threshold, 32 MiB at most, from it) and the panel from this worker's
  // arena, so the freed block is a hole no panel reuses: hand its pages back to the system,
  // or the process keeps them (measured: 2.4 GiB of RSS for the HC-only prefill at tp 4).
  malloc_trim(0);
#endif
  return {packed->bytes(), bytes};
}

void unpackReleased(const Tensor& w, void* dst) {
  if (!w.released()) fail(ErrorKind::Runtime, weightName(w) + " was not released (unpackReleased)");
  if (w.dtype() != DType::BF16) {
    fail(ErrorKind::Unsupported,
         weightName(w) +
             " was released after packing for the exact GEMM; its fp8 codes are not kept (the panel holds their bf16 values), so it cannot be downloaded");
  }
  const auto packed = w.rank() == 2 ? exactForm(w, WeightDType::Bf16) : nullptr;
  if (!packed) fail(ErrorKind::Runtime, weightName(w) + " was released without its exact-GEMM panel");
  const PackedWeight& pw = *packed;
  const int64_t inF = pw.inF;
  auto* out = static_cast<uint16_t*>(dst);
  for (int64_t p = 0; p < pw.panels(); p++) {
    const uint16_t* base = pw.panel(p);
    const int width = pw.width(p), valid = pw.valid(p);
    for (int j = 0; j < valid; j++) {
      const uint16_t* src = base + panelSlot(j, width, pw.geometry);
      uint16_t* row = out + (p * pw.geometry.width + j) * inF;
      for (int64_t k = 0; k < inF; k++) row[k] = src[k * width];
    }
  }
}

}  // namespace hcsp::gemm
