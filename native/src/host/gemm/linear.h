// The host device's GEMM: y[t,o] = bf(sum_k x[t,k] * w[o,k]) with x [rows, inF] and w
// [outF, inF] (PyTorch layout) as bf16 bits, y [rows, outF] bf16 bits, fp32 accumulation.
// GemmMode::Exact keeps core's order (each output summed over k = 0..inF-1, one add at a
// time: layers/linearMath.ts), so it is bit-exact with the CPU reference; GemmMode::Blas
// goes through OpenBLAS's sgemm (its own blocking order), as a GPU BLAS would.
#pragma once
#include <cstdint>

#include "../kernel_registry.h"
#include "../fp8_format.h"

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

/** which exact GEMM reads a weight: linearBf16 (a bf16 weight) or linearFp8Ptpc (an fp8 one) */
enum class GemmWeightKind { Linear, Fp8 };

struct PackResult {
  /** the panel's bytes, now counted by the allocator */
  int64_t panelBytes;
  /** the original bytes freed (0: nothing to free, e.g. an empty weight) */
  int64_t releasedBytes;
};

/**
 * Packs the whole weight w [outF, inF] (host memory, bf16 for Linear, fp8 for Fp8) into the
 * exact GEMM's panels for this process's ISA, kept on w as the GEMMs' first call would keep
 * them, then frees w's own bytes (Tensor::releaseData): from then on the exact GEMMs read
 * only the panel, with the same results bit for bit, and nothing else can read w (the run
 * worker refuses it to other ops and to the 'blas' mode; download rebuilds a bf16 weight
 * from the panel). Any other packed form kept on w is dropped. Packing a released weight
 * again is a no-op. The caller guarantees no kernel is reading w meanwhile.
 */
PackResult packForGemm(Tensor& w, GemmWeightKind kind, ThreadPool& pool);

/**
 * A released weight's bytes (dst: w.bytes() of them) rebuilt from its exact-GEMM panel: a
 * bf16 weight's panel holds every value's bits. A released fp8 weight fails (its panel holds
 * the bf16 values, and both NaN codes of e4m3fn widen to one NaN).
 */
void unpackReleased(const Tensor& w, void* dst);

}  // namespace hcsp::gemm
