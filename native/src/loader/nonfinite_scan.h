// NaN and Inf counted from the bits, as the CLI's countNonFinite does
// (packages/cli/src/checkpoint/nonFinite.ts): bf16 and fp32 by an exponent of all ones (Inf when
// the mantissa is zero), e4m3fn by S.1111.111, e4m3fnuz by 0x80; int32 has none. Written as
// plain counting loops over whole elements, which the compiler vectorizes.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "../host/tensor.h"

namespace hcsp::loader {

struct NonFinite {
  int64_t nan = 0;
  int64_t inf = 0;
};

/** NaN and Inf among the `bytes / dtypeBytes(dtype)` elements at `p` (whole, aligned elements) */
inline NonFinite countNonFinite(DType dtype, const uint8_t* p, size_t bytes) {
  NonFinite c;
  int64_t special = 0, inf = 0;
  switch (dtype) {
    case DType::BF16: {
      const auto* x = reinterpret_cast<const uint16_t*>(p);
      const size_t n = bytes / 2;
      for (size_t i = 0; i < n; i++) {
        special += (x[i] & 0x7f80u) == 0x7f80u;
        inf += (x[i] & 0x7fffu) == 0x7f80u;
      }
      break;
    }
    case DType::F32: {
      const auto* x = reinterpret_cast<const uint32_t*>(p);
      const size_t n = bytes / 4;
      for (size_t i = 0; i < n; i++) {
        special += (x[i] & 0x7f800000u) == 0x7f800000u;
        inf += (x[i] & 0x7fffffffu) == 0x7f800000u;
      }
      break;
    }
    case DType::FP8E4M3FN:
      for (size_t i = 0; i < bytes; i++) special += (p[i] & 0x7fu) == 0x7fu;
      break;
    case DType::FP8E4M3FNUZ:
      for (size_t i = 0; i < bytes; i++) special += p[i] == 0x80u;
      break;
    case DType::I32:
      break;
  }
  c.nan = special - inf;
  c.inf = inf;
  return c;
}

}  // namespace hcsp::loader
