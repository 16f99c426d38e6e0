// The project's own declarations of the hipBLASLt subset blaslt.cc calls through dlopen/dlsym
// (libhipblaslt.so.1 of ROCm 7 / hipBLASLt 1.x, or libhipblaslt.so.0 of ROCm 6). hipBLASLt's
// values are NOT cuBLASLt's (blaslt_abi_cuda.h): compute type fp32 is 2 here and 68 there,
// transposes are 111/112 here and 0/1 there, the algo struct is 24 bytes here and 64 there, and
// the matmul-descriptor attributes are numbered differently.
//
// Sources read (repo / path / commit):
//   ROCm/rocm-libraries projects/hipblaslt/library/include/hipblaslt/hipblaslt.h 006d2e0ffee296bb4b0b5af671a69866880e17fc
//       (hipBLASLt 1.x: hipblasLtMatmulDescAttributes_t incl. A/B_SCALE_MODE = 31/32,
//        hipblasLtMatmulMatrixScale_t, hipblasLtMatmulAlgo_t, hipblasLtMatmulHeuristicResult_t, prototypes)
//   ROCm/hipBLASLt library/include/hipblaslt.h 7d9fb683db25941d38c5f89749a2c26acc493992 (develop, Oct 2024) and
//       rocm-6.0.0 592518e7cb9a8215f0f091c9a2a646d0320d306d, rocm-6.2.0 500158158f48332c80bc35edaec1335ad328a5f6
//       (ROCm 6: TRANSA/TRANSB/A,B_SCALE_POINTER and the structs as above; no A/B_SCALE_MODE attribute)
//   ROCm/hipBLAS-common library/include/hipblas-common.h 6b7748e2fd2d902b45258887856db0085fb51b63
//       (hipblasStatus_t, hipblasOperation_t, hipblasComputeType_t), and ROCm/hipBLAS
//       library/include/hipblas.h at rocm-6.0.0 00c06764f33fda20ff96dea2b5b8e7dc91f96b0c (the same values for ROCm 6)
//   ROCm/HIP include/hip/library_types.h c5e11fcac8249ce4f7e70157588ff9661a870b59 (hipDataType) and
//       rocm-6.0.0 f7c33a4cbb660011cf9429b8b65d631066cd51d2 (no HIP_R_8F_E4M3 yet; the fnuz types are 1000/1001)
//   the same hipblaslt.h at 006d2e0ffee296bb4b0b5af671a69866880e17fc:
//       HIPBLASLT_MATMUL_DESC_UNIFORM_SUMMATION_ORDER_EXT = 105; TensileLite's ContractionSolution.cpp:
//       a solution's split-k ("GSU") is problem.getParams().gsu() if set (C++ ext API only) else
//       calculateAutoGSU(problem, hardware), which for a solution with GlobalSplitU -1 depends on the
//       workgroup count, so on M and N: one solution index is not enough for row-count invariance
//   hipblasLtMatmulDescSetAttribute's size checks (A/B_SCALE_MODE read sizeof(hipblasLtMatmulMatrixScale_t)
//       = 4 bytes; TRANSA/TRANSB int32_t): rocblaslt_auxiliary.cpp, ROCm/rocm-libraries
//       projects/hipblaslt/library/src/amd_detail/rocblaslt/src (stored copy)
#pragma once
#include <cstddef>
#include <cstdint>

#include "hip_abi.h"

namespace hcsp::gpu::hipblaslt {

// hipblasStatus_t (hipblas-common.h)
using hipblasStatus_t = int;
constexpr hipblasStatus_t HIPBLAS_STATUS_SUCCESS = 0;
constexpr hipblasStatus_t HIPBLAS_STATUS_INVALID_VALUE = 3;
constexpr hipblasStatus_t HIPBLAS_STATUS_NOT_SUPPORTED = 7;
/** hipblasStatus_t names, index = value (hipblas-common.h) */
constexpr const char* kStatusNames[] = {
    "HIPBLAS_STATUS_SUCCESS",       "HIPBLAS_STATUS_NOT_INITIALIZED",   "HIPBLAS_STATUS_ALLOC_FAILED",   "HIPBLAS_STATUS_INVALID_VALUE",
    "HIPBLAS_STATUS_MAPPING_ERROR", "HIPBLAS_STATUS_EXECUTION_FAILED",  "HIPBLAS_STATUS_INTERNAL_ERROR", "HIPBLAS_STATUS_NOT_SUPPORTED",
    "HIPBLAS_STATUS_ARCH_MISMATCH", "HIPBLAS_STATUS_HANDLE_IS_NULLPTR", "HIPBLAS_STATUS_INVALID_ENUM",   "HIPBLAS_STATUS_UNKNOWN",
};
static_assert(sizeof(kStatusNames) / sizeof(kStatusNames[0]) == 12, "hipblasStatus_t has 12 values (0..11)");

// hipblasOperation_t (hipblas-common.h)
using hipblasOperation_t = int32_t;
constexpr hipblasOperation_t HIPBLAS_OP_N = 111;
constexpr hipblasOperation_t HIPBLAS_OP_T = 112;

// hipblasComputeType_t (hipblas-common.h)
using hipblasComputeType_t = int;
constexpr hipblasComputeType_t HIPBLAS_COMPUTE_32F = 2;

// hipDataType (hip/library_types.h)
using hipDataType = int;
constexpr hipDataType HIP_R_32F = 0;
constexpr hipDataType HIP_R_16BF = 14;
constexpr hipDataType HIP_R_8F_E4M3 = 28;         // OCP e4m3fn (gfx950); absent from ROCm 6.0's header
constexpr hipDataType HIP_R_8F_E4M3_FNUZ = 1000;  // gfx94x's e4m3fnuz

// hipblasLtMatmulDescAttributes_t (hipblaslt.h)
using hipblasLtMatmulDescAttributes_t = int;
constexpr hipblasLtMatmulDescAttributes_t HIPBLASLT_MATMUL_DESC_TRANSA = 0;           // int32_t
constexpr hipblasLtMatmulDescAttributes_t HIPBLASLT_MATMUL_DESC_TRANSB = 1;           // int32_t
constexpr hipblasLtMatmulDescAttributes_t HIPBLASLT_MATMUL_DESC_A_SCALE_POINTER = 5;  // const void*
constexpr hipblasLtMatmulDescAttributes_t HIPBLASLT_MATMUL_DESC_B_SCALE_POINTER = 6;  // const void*
constexpr hipblasLtMatmulDescAttributes_t HIPBLASLT_MATMUL_DESC_A_SCALE_MODE = 31;    // hipblasLtMatmulMatrixScale_t (hipBLASLt 1.x)
constexpr hipblasLtMatmulDescAttributes_t HIPBLASLT_MATMUL_DESC_B_SCALE_MODE = 32;
// int32_t, 0 or 1 (the newest hipBLASLt; older ones refuse it with INVALID_VALUE): "Request a
// uniform summation order across the M dimension ... Enabling the mode restricts kernel selection and
// the launch configuration ... hipblasLtMatmul() returns HIPBLAS_STATUS_INVALID_VALUE when no
// uniform-safe configuration exists for the resolved launch rather than silently producing a
// non-uniform result". TensileLite then zeroes StaggerU (the per-workgroup rotation of the k loop)
// and admits only split-k / stream-K partitions it proves uniform.
constexpr hipblasLtMatmulDescAttributes_t HIPBLASLT_MATMUL_DESC_UNIFORM_SUMMATION_ORDER_EXT = 105;

// hipblasLtMatmulMatrixScale_t (hipblaslt.h, hipBLASLt 1.x): OUTER_VEC_32F = "single-precision
// vectors ... A and B ... M and N elements respectively, and each (i, j)-th element of product of
// A and B is multiplied by i-th element of A scale and j-th element of B scale"
using hipblasLtMatmulMatrixScale_t = int32_t;
constexpr hipblasLtMatmulMatrixScale_t HIPBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F = 3;

// hipblasLtMatmulPreferenceAttributes_t
using hipblasLtMatmulPreferenceAttributes_t = int;
constexpr hipblasLtMatmulPreferenceAttributes_t HIPBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES = 1;  // uint64_t

using hipblasLtHandle_t = void*;
using hipblasLtMatmulDesc_t = struct hipblasLtMatmulDescOpaque*;
using hipblasLtMatrixLayout_t = struct hipblasLtMatrixLayoutOpaque*;
using hipblasLtMatmulPreference_t = struct hipblasLtMatmulPreferenceOpaque*;

/**
 * hipblasLtMatmulAlgo_t: uint8_t data[16]; size_t max_workspace_bytes. Its first 4 bytes are the
 * solution index (an int, negative when none) that hipblaslt_ext::getIndexFromAlgo returns
 * (PyTorch's tunable hipBLASLt reads it the same way when the library lacks that function)
 */
struct hipblasLtMatmulAlgo_t {
  uint8_t data[16];
  size_t max_workspace_bytes;
};
static_assert(sizeof(hipblasLtMatmulAlgo_t) == 24, "hipblasLtMatmulAlgo_t is 24 bytes (hipblaslt.h)");

/** hipblasLtMatmulHeuristicResult_t: algo; size_t workspaceSize; hipblasStatus_t state; float wavesCount; int reserved[4] */
struct hipblasLtMatmulHeuristicResult_t {
  hipblasLtMatmulAlgo_t algo;
  size_t workspaceSize;
  hipblasStatus_t state;
  float wavesCount;
  int reserved[4];
};
static_assert(sizeof(hipblasLtMatmulHeuristicResult_t) == 56, "hipblasLtMatmulHeuristicResult_t is 56 bytes (hipblaslt.h)");
static_assert(offsetof(hipblasLtMatmulHeuristicResult_t, workspaceSize) == 24, "hipblasLtMatmulHeuristicResult_t::workspaceSize");
static_assert(offsetof(hipblasLtMatmulHeuristicResult_t, state) == 32, "hipblasLtMatmulHeuristicResult_t::state");

using hipblasLtCreate_t = hipblasStatus_t (*)(hipblasLtHandle_t* handle);
using hipblasLtDestroy_t = hipblasStatus_t (*)(hipblasLtHandle_t handle);
using hipblasLtMatmulDescCreate_t = hipblasStatus_t (*)(hipblasLtMatmulDesc_t* matmulDesc, hipblasComputeType_t computeType, hipDataType scaleType);
using hipblasLtMatmulDescDestroy_t = hipblasStatus_t (*)(hipblasLtMatmulDesc_t matmulDesc);
using hipblasLtMatmulDescSetAttribute_t = hipblasStatus_t (*)(hipblasLtMatmulDesc_t matmulDesc, hipblasLtMatmulDescAttributes_t attr, const void* buf,
                                                              size_t sizeInBytes);
using hipblasLtMatrixLayoutCreate_t = hipblasStatus_t (*)(hipblasLtMatrixLayout_t* matLayout, hipDataType type, uint64_t rows, uint64_t cols, int64_t ld);
using hipblasLtMatrixLayoutDestroy_t = hipblasStatus_t (*)(hipblasLtMatrixLayout_t matLayout);
using hipblasLtMatmulPreferenceCreate_t = hipblasStatus_t (*)(hipblasLtMatmulPreference_t* pref);
using hipblasLtMatmulPreferenceDestroy_t = hipblasStatus_t (*)(hipblasLtMatmulPreference_t pref);
using hipblasLtMatmulPreferenceSetAttribute_t = hipblasStatus_t (*)(hipblasLtMatmulPreference_t pref, hipblasLtMatmulPreferenceAttributes_t attr,
                                                                    const void* buf, size_t sizeInBytes);
using hipblasLtMatmulAlgoGetHeuristic_t = hipblasStatus_t (*)(hipblasLtHandle_t handle, hipblasLtMatmulDesc_t matmulDesc, hipblasLtMatrixLayout_t Adesc,
                                                              hipblasLtMatrixLayout_t Bdesc, hipblasLtMatrixLayout_t Cdesc, hipblasLtMatrixLayout_t Ddesc,
                                                              hipblasLtMatmulPreference_t pref, int requestedAlgoCount,
                                                              hipblasLtMatmulHeuristicResult_t heuristicResultsArray[], int* returnAlgoCount);
using hipblasLtMatmul_t = hipblasStatus_t (*)(hipblasLtHandle_t handle, hipblasLtMatmulDesc_t matmulDesc, const void* alpha, const void* A,
                                              hipblasLtMatrixLayout_t Adesc, const void* B, hipblasLtMatrixLayout_t Bdesc, const void* beta, const void* C,
                                              hipblasLtMatrixLayout_t Cdesc, void* D, hipblasLtMatrixLayout_t Ddesc, const hipblasLtMatmulAlgo_t* algo,
                                              void* workspace, size_t workspaceSizeInBytes, hip::hipStream_t stream);

struct HipBlasLtApi {
  hipblasLtCreate_t hipblasLtCreate = nullptr;
  hipblasLtDestroy_t hipblasLtDestroy = nullptr;
  hipblasLtMatmulDescCreate_t hipblasLtMatmulDescCreate = nullptr;
  hipblasLtMatmulDescDestroy_t hipblasLtMatmulDescDestroy = nullptr;
  hipblasLtMatmulDescSetAttribute_t hipblasLtMatmulDescSetAttribute = nullptr;
  hipblasLtMatrixLayoutCreate_t hipblasLtMatrixLayoutCreate = nullptr;
  hipblasLtMatrixLayoutDestroy_t hipblasLtMatrixLayoutDestroy = nullptr;
  hipblasLtMatmulPreferenceCreate_t hipblasLtMatmulPreferenceCreate = nullptr;
  hipblasLtMatmulPreferenceDestroy_t hipblasLtMatmulPreferenceDestroy = nullptr;
  hipblasLtMatmulPreferenceSetAttribute_t hipblasLtMatmulPreferenceSetAttribute = nullptr;
  hipblasLtMatmulAlgoGetHeuristic_t hipblasLtMatmulAlgoGetHeuristic = nullptr;
  hipblasLtMatmul_t hipblasLtMatmul = nullptr;
};

}  // namespace hcsp::gpu::hipblaslt
