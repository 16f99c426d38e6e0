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

/**
 * An IEEE-style format of word T whose exponent bits are `exp` (the sign the top bit): adds the
 * words with an exponent of all ones to `special`, those of them with a zero mantissa to `inf`
 */
template <class T>
inline void countIeee(const uint8_t* p, size_t bytes, T exp, int64_t& special, int64_t& inf) {
  const auto* x = reinterpret_cast<const T*>(p);
  const size_t n = bytes / sizeof(T);
  const T abs = static_cast<T>(static_cast<T>(~T{0}) >> 1);  // all but the sign
  int64_t s = 0, f = 0;
  for (size_t i = 0; i < n; i++) {
    s += (x[i] & exp) == exp;
    f += (x[i] & abs) == exp;
  }
  special += s;
  inf += f;
}

/** NaN and Inf among the `bytes / dtypeBytes(dtype)` elements at `p` (whole, aligned elements) */
inline NonFinite countNonFinite(DType dtype, const uint8_t* p, size_t bytes) {
  NonFinite c;
  int64_t special = 0, inf = 0;
  switch (dtype) {
    case DType::BF16:
      countIeee<uint16_t>(p, bytes, 0x7f80u, special, inf);
      break;
    case DType::F32:
      countIeee<uint32_t>(p, bytes, 0x7f800000u, special, inf);
      break;
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
