// AVX-512 forms of the HC kernels' elementwise loops (hc_avx512.cc, compiled with AVX-512
// flags; called only when gemmIsa() is Avx512). Same per-element operation sequence as the
// scalar / 4-lane code in hc_kernels.cc; lanes are independent elements (or independent sums).
#pragma once
#include <cstdint>

#include "../../ops/hc_checks.h"

namespace hcsp {
/**
 * inj_s = fl(2 sigmoid(bf(raw_s / n))); 'hf' rounds the sigmoid to bf16 first (the doubling is
 * exact). One scalar per stream, defined in hc_kernels.cc (the baseline ISA) for both paths.
 */
float hcInjectScale(uint16_t rawBits, int64_t n, ops::HcContract contract);
}  // namespace hcsp

namespace hcsp::hcavx512 {

/** hcCombineNorm over rows [t0, t1): xo = combine (or copy) of xd, no = normed of xo */
void combineNormRange(const uint16_t* xd, const uint16_t* yd, const uint16_t* rd, uint16_t* xo, uint16_t* no, const float* sc, int64_t n, int64_t h,
                      ops::HcContract contract, float epsF, int64_t t0, int64_t t1);

/** hcCombine over rows [t0, t1) */
void combineRange(const uint16_t* xd, const uint16_t* bd, const uint16_t* rd, uint16_t* yd, int64_t n, int64_t h, ops::HcContract contract, int64_t t0,
                  int64_t t1);

/** hcGatedMean over rows [t0, t1) */
void gatedMeanRange(const uint16_t* ud, const uint16_t* nd, uint16_t* xd, int64_t n, int64_t h, ops::HcContract contract, int64_t t0, int64_t t1);

}  // namespace hcsp::hcavx512
