// The host device's GEMM: y[t,o] = bf(sum_k x[t,k] * w[o,k]) with x [rows, inF] and w
// [outF, inF] (PyTorch layout) as bf16 bits, y [rows, outF] bf16 bits, fp32 accumulation.
// GemmMode::Exact keeps core's order (each output summed over k = 0..inF-1, one add at a
// time: layers/linearMath.ts), so it is bit-exact with the CPU reference; GemmMode::Blas
// goes through OpenBLAS's sgemm (its own blocking order), as a GPU BLAS would.
#pragma once
#include <cstdint>

#include "../kernel_registry.h"
#include "../numerics/fp8.h"

namespace hcsp::gemm {

/**
 * `w` may be part of a larger tensor (an expert's slice); `wOwner`, when given, is the tensor
 * that holds it, which may keep a packed copy of its panels for later calls (weights are
 * immutable once uploaded), keyed by the offset of `w` in it.
 */
void linearBf16(const uint16_t* x, int64_t rows, int64_t inF, const uint16_t* w, int64_t outF, uint16_t* y, const KernelContext& ctx,
                const Tensor* wOwner = nullptr);

/**
 * FP8 PTPC (layers/fp8Linear.ts): y[t,o] = bf(scaled(acc)), acc = sum_k dec(q[t,k]) * dec(qW[o,k])
 * in the same order (products of two e4m3 values are exact in fp32), scaled(acc) =
 * fl(fl(acc * sw[o]) * sx[t]) when weightFirst, else fl(fl(acc * sx[t]) * sw[o]). q and qW in
 * `format`; `wOwner` as for linearBf16.
 */
void linearFp8Ptpc(const uint8_t* q, const float* sx, int64_t rows, int64_t inF, const uint8_t* qW, const float* sw, int64_t outF, const Fp8Format& format,
                   bool weightFirst, uint16_t* y, const KernelContext& ctx, const Tensor* wOwner = nullptr);

}  // namespace hcsp::gemm
