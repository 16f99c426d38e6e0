// Declarations of gemm.cu's kernels (the reference-order GEMMs), for their launchers
// (ops/gemm_ops.cc), and the GEMM entries the other GPU launchers call (the MoE's experts).
#pragma once
#include "../vendor.h"

/**
 * y[t,o] = bf(sum_k x[t,k] * w[o,k]), k = 0..inF-1 in order, fp32 (layers/linearMath.ts); one
 * thread per output. The _v8 variant reads 8 bf16 at a time (same order): x and w 16-byte
 * aligned and inF a multiple of 8.
 */
HCSP_GLOBAL void hcsp_gemm_linear_bf16(const uint16_t* x, const uint16_t* w, uint16_t* y, int64_t rows, int64_t inF, int64_t outF);
HCSP_GLOBAL void hcsp_gemm_linear_bf16_v8(const uint16_t* x, const uint16_t* w, uint16_t* y, int64_t rows, int64_t inF, int64_t outF);
/**
 * The grouped `linear`: y[t,o] = linear's output of x[t,:] and row o of w's group rowGroup[t]
 * (w stacks the groups' [outF, inF] weights), for t < *rows only: the row count is read on
 * the device. Each output is computed exactly as hcsp_gemm_linear_bf16 computes it (the same
 * function), so a row's bits are those of `linear` on its group's weight. The _v8 variant as
 * above (x, w 16-byte aligned, inF a multiple of 8).
 */
HCSP_GLOBAL void hcsp_gemm_grouped_bf16(const uint16_t* x, const uint16_t* w, const int32_t* rowGroup, const int32_t* rows, uint16_t* y, int64_t inF,
                                        int64_t outF);
HCSP_GLOBAL void hcsp_gemm_grouped_bf16_v8(const uint16_t* x, const uint16_t* w, const int32_t* rowGroup, const int32_t* rows, uint16_t* y, int64_t inF,
                                           int64_t outF);

/**
 * FP8 PTPC (layers/fp8Linear.ts): acc = sum_k dec(q[t,k]) * dec(qW[o,k]) in k order (fp32);
 * y = bf(fl(fl(acc * sw[o]) * sx[t])) when weightFirst, else bf(fl(fl(acc * sx[t]) * sw[o])).
 * fnuz: e4m3fnuz, else e4m3fn. One thread per output.
 */
HCSP_GLOBAL void hcsp_gemm_fp8_ptpc(const uint8_t* q, const float* sx, const uint8_t* qW, const float* sw, uint16_t* y, int64_t rows, int64_t inF,
                                    int64_t outF, int32_t fnuz, int32_t weightFirst);

#if !defined(__CUDACC__) && !defined(__HIP__)
#include <cstdint>
namespace hcsp::gpu {
struct GpuContext;
/**
 * The bf16 GEMM of a GPU launcher (device pointers; x [rows, inF], w [outF, inF], y [rows, outF]):
 * g.gemm == GemmMode::Exact runs the reference-order kernel (bit-exact with the CPU reference),
 * GemmMode::Vendor the vendor BLASLt (blaslt.h); other modes fail. Nothing to do for an empty y.
 */
void gemmLinearBf16(const GpuContext& g, const uint16_t* x, int64_t rows, int64_t inF, const uint16_t* w, int64_t outF, uint16_t* y);
/**
 * The grouped bf16 GEMM (hcsp_gemm_grouped_bf16; device pointers: x [maxRows, inF], w [groups *
 * outF, inF], rowGroup [maxRows], *rows <= maxRows, y [maxRows, outF]): one launch sized for
 * maxRows, the device's row count bounding the work. It is the exact kernel in every mode the
 * GPU devices have: a vendor GEMM needs its M on the host (grouped vendor GEMMs: issue 24).
 */
void gemmGroupedLinearBf16(const GpuContext& g, const uint16_t* x, int64_t maxRows, int64_t inF, const uint16_t* w, int64_t outF, const int32_t* rowGroup,
                           const int32_t* rows, uint16_t* y);
/** The FP8 PTPC GEMM likewise (q, qW in e4m3fnuz when fnuz, else e4m3fn; sx [rows], sw [outF] f32). */
void gemmFp8LinearPtpc(const GpuContext& g, const uint8_t* q, const float* sx, int64_t rows, int64_t inF, const uint8_t* qW, const float* sw, int64_t outF,
                       bool fnuz, bool weightFirst, uint16_t* y);
}  // namespace hcsp::gpu
#endif
