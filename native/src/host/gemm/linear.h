// The host device's GEMM: y[t,o] = bf(sum_k x[t,k] * w[o,k]) with x [rows, inF] and w
// [outF, inF] (PyTorch layout) as bf16 bits, y [rows, outF] bf16 bits, fp32 accumulation.
// GemmMode::Exact keeps core's order (each output summed over k = 0..inF-1, one add at a
// time: layers/linearMath.ts), so it is bit-exact with the CPU reference; GemmMode::Blas
// goes through OpenBLAS's sgemm (its own blocking order), as a GPU BLAS would.
#pragma once
#include <cstdint>

#include "../kernel_registry.h"

namespace hcsp::gemm {

/**
 * `w` may be part of a larger tensor (an expert's slice); `wOwner`, when given, is the tensor
 * that holds it, which may keep a packed copy of its panels for later calls (weights are
 * immutable once uploaded), keyed by the offset of `w` in it.
 */
void linearBf16(const uint16_t* x, int64_t rows, int64_t inF, const uint16_t* w, int64_t outF, uint16_t* y, const KernelContext& ctx,
                const Tensor* wOwner = nullptr);

/** the same on fp32 operands holding exact products (fp8 values): y fp32, un-rounded sums */
void linearF32(const float* x, int64_t rows, int64_t inF, const float* w, int64_t outF, float* y, const KernelContext& ctx);

}  // namespace hcsp::gemm
