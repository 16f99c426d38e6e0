// AVX-512 forms of the HC kernels' loops (hc_kernels.cc), chosen at run time when gemmIsa() is
// Avx512 (this file alone carries AVX-512 flags, native/CMakeLists.txt). Every lane is one
// output element and runs exactly the scalar operation sequence: the 16-lane exp / sigmoid /
// bf16 rounding are vec_math.h's 4-lane forms at 16 lanes (vec_lanes.h, included in this
// file's anonymous namespace; no FMA: this file is compiled without -mfma and with
// -ffp-contract=off). The norm's sum of squares is canonical_sumsq.h's (canonical order v1,
// its FMAs only on exact bf16 squares). Loop tails use the scalar originals.
#include "hc_avx512.h"

// GCC 12 warns inside its own AVX-512 conversion intrinsics (_mm512_undefined_* operands)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <cstring>

#include "../../numerics/bf16.h"
#include "../../numerics/fp32_math.h"
#include "canonical_sumsq.h"

namespace hcsp::hcavx512 {
namespace {

using Contract = ops::HcContract;

constexpr int W = 16;
typedef float F __attribute__((vector_size(64)));
typedef int32_t I __attribute__((vector_size(64)));
typedef uint32_t U __attribute__((vector_size(64)));
typedef uint16_t H __attribute__((vector_size(32)));

#include "vec_lanes.h"

inline F loadF(const float* p) {
  F f;
  std::memcpy(&f, p, sizeof f);
  return f;
}

/** hc_kernels.cc's combineRow */
void combineRow(const uint16_t* xIn, uint16_t* xOut, const uint16_t* y, const uint16_t* raw, int64_t n, int64_t h, Contract contract) {
  for (int64_t s = 0; s < n; s++) {
    const float inj = hcInjectScale(raw[s], n, contract);
    const F injv = splat(inj);
    const uint16_t* xs = xIn + s * h;
    uint16_t* os = xOut + s * h;
    int64_t j = 0;
    if (contract == Contract::Atom) {
      for (; j + W <= h; j += W) storeBf16(os + j, loadBf16(xs + j) + loadBf16(y + j) * injv);
      for (; j < h; j++) os[j] = f32ToBf16(bf16ToF32(xs[j]) + bf16ToF32(y[j]) * inj);
    } else {
      for (; j + W <= h; j += W) storeBf16(os + j, loadBf16(xs + j) + roundBf16v(loadBf16(y + j) * injv));
      for (; j < h; j++) os[j] = f32ToBf16(bf16ToF32(xs[j]) + roundBf16(bf16ToF32(y[j]) * inj));
    }
  }
}

}  // namespace

void combineRange(const uint16_t* xd, const uint16_t* bd, const uint16_t* rd, uint16_t* yd, int64_t n, int64_t h, Contract contract, int64_t t0, int64_t t1) {
  const int64_t width = n * h;
  for (int64_t t = t0; t < t1; t++) combineRow(xd + t * width, yd + t * width, bd + t * h, rd + t * n, n, h, contract);
}

void combineNormRange(const uint16_t* xd, const uint16_t* yd, const uint16_t* rd, uint16_t* xo, uint16_t* no, const float* sc, int64_t n, int64_t h,
                      Contract contract, float epsF, int64_t t0, int64_t t1) {
  const int64_t width = n * h;
  const double hd = static_cast<double>(h);
  for (int64_t t = t0; t < t1; t++) {
    if (yd) {
      combineRow(xd + t * width, xo + t * width, yd + t * h, rd + t * n, n, h, contract);
    } else {
      std::memcpy(xo + t * width, xd + t * width, width * 2);
    }
    for (int64_t s = 0; s < n; s++) {
      const uint16_t* xs = xo + t * width + s * h;
      const float rstd = fp32::rsqrtF32(static_cast<float>(static_cast<double>(canonical::sumSquaresBf16Avx512(xs, h)) / hd) + epsF);
      const F rv = splat(rstd);
      const float* ss = sc + s * h;
      uint16_t* ns = no + t * width + s * h;
      int64_t j = 0;
      for (; j + W <= h; j += W) storeBf16(ns + j, (loadBf16(xs + j) * rv) * loadF(ss + j));
      for (; j < h; j++) ns[j] = f32ToBf16((bf16ToF32(xs[j]) * rstd) * ss[j]);
    }
  }
}

void gatedMeanRange(const uint16_t* ud, const uint16_t* nd, uint16_t* xd, int64_t n, int64_t h, Contract contract, int64_t t0, int64_t t1) {
  const int64_t width = n * h;
  const float nf = static_cast<float>(n);
  const F nv = splat(nf);
  for (int64_t t = t0; t < t1; t++) {
    const uint16_t* ur = ud + t * width;
    const uint16_t* nr = nd + t * width;
    uint16_t* xr = xd + t * h;
    int64_t j = 0;
    if (contract == Contract::Atom) {
      for (; j + W <= h; j += W) {
        F acc = splat(0.0f);
        for (int64_t s = 0; s < n; s++) acc = acc + sigmoidF32(loadBf16(ur + s * h + j)) * loadBf16(nr + s * h + j);
        storeBf16(xr + j, acc / nv);
      }
    } else {
      for (; j + W <= h; j += W) {
        F acc = splat(0.0f);
        for (int64_t s = 0; s < n; s++) acc = acc + roundBf16v(roundBf16v(sigmoidF32(loadBf16(ur + s * h + j))) * loadBf16(nr + s * h + j));
        storeBf16(xr + j, acc / nv);
      }
    }
    for (; j < h; j++) {
      float acc = 0.0f;
      for (int64_t s = 0; s < n; s++) {
        const float sig = fp32::sigmoidF32(bf16ToF32(ur[s * h + j]));
        const float v = bf16ToF32(nr[s * h + j]);
        acc = acc + (contract == Contract::Atom ? sig * v : roundBf16(roundBf16(sig) * v));
      }
      xr[j] = f32ToBf16(acc / nf);
    }
  }
}

}  // namespace hcsp::hcavx512
