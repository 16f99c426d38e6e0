// The project's own declarations of the cuBLASLt subset blaslt.cc calls through dlopen/dlsym
// (libcublasLt.so.13, or .so.12). cuBLASLt's values are NOT hipBLASLt's (blaslt_abi_hip.h):
// compute type fp32 is 68 here and 2 there, transposes are 0/1 here and 111/112 there, the algo
// struct is 64 bytes here and 24 there, and the matmul-descriptor attributes are numbered
// differently (TRANSA is 3 here, 0 there; A_SCALE_POINTER 17 here, 5 there).
//
// Sources read: NVIDIA's own headers from the nvidia-cublas 13.1.1.3 wheel (CUBLAS_VERSION
// 130101; nvidia_cublas-13.1.1.3-py3-none-manylinux_2_27_x86_64.whl, nvidia/cu13/include/):
//   cublasLt.h   cublasLtMatmulAlgo_t, cublasLtMatmulHeuristicResult_t, cublasLtMatmulDescAttributes_t,
//                cublasLtMatmulMatrixScale_t, cublasLtMatmulPreferenceAttributes_t, prototypes
//   cublas_api.h cublasStatus_t, cublasOperation_t, cublasComputeType_t
//                cublasLtMatmulAlgoConfigAttributes_t, cublasLtReductionScheme_t, cublasLtMatmulAlgoCheck and
//                cublasLtMatmulAlgoConfigGetAttribute (the row-invariant plans; values also in NVIDIA's nvmath-python
//                bindings docs, nvmath.bindings.cublasLt.MatmulAlgoConfigAttribute / ReductionScheme)
// and cudaDataType from library_types.h of the CUDA 13.0 toolkit installed here
// (/usr/local/cuda-13.0/include, NVIDIA's nvidia-cuda-runtime 13.0.96 wheel).
// libcublasLt.so.12 is assumed to share these values (not checked against a 12.x header: none of
// NVIDIA's is stored here); a release that does not know the outer-vector scale mode refuses it
// at cublasLtMatmulDescSetAttribute or in the heuristic, and the error names the call.
#pragma once
#include <cstddef>
#include <cstdint>

#include "cuda_abi.h"

namespace hcsp::gpu::cublaslt {

// cublasStatus_t (cublas_api.h)
using cublasStatus_t = int;
constexpr cublasStatus_t CUBLAS_STATUS_SUCCESS = 0;
constexpr cublasStatus_t CUBLAS_STATUS_NOT_INITIALIZED = 1;
constexpr cublasStatus_t CUBLAS_STATUS_ALLOC_FAILED = 3;
constexpr cublasStatus_t CUBLAS_STATUS_INVALID_VALUE = 7;
constexpr cublasStatus_t CUBLAS_STATUS_ARCH_MISMATCH = 8;
constexpr cublasStatus_t CUBLAS_STATUS_MAPPING_ERROR = 11;
constexpr cublasStatus_t CUBLAS_STATUS_EXECUTION_FAILED = 13;
constexpr cublasStatus_t CUBLAS_STATUS_INTERNAL_ERROR = 14;
constexpr cublasStatus_t CUBLAS_STATUS_NOT_SUPPORTED = 15;
constexpr cublasStatus_t CUBLAS_STATUS_LICENSE_ERROR = 16;

// cublasOperation_t (cublas_api.h)
using cublasOperation_t = int32_t;
constexpr cublasOperation_t CUBLAS_OP_N = 0;
constexpr cublasOperation_t CUBLAS_OP_T = 1;

// cublasComputeType_t (cublas_api.h)
using cublasComputeType_t = int;
constexpr cublasComputeType_t CUBLAS_COMPUTE_32F = 68;

// cudaDataType (library_types.h)
using cudaDataType = int;
constexpr cudaDataType CUDA_R_32F = 0;
constexpr cudaDataType CUDA_R_16BF = 14;
constexpr cudaDataType CUDA_R_8F_E4M3 = 28;  // e4m3fn; CUDA has no e4m3fnuz type

// cublasLtMatmulDescAttributes_t (cublasLt.h)
using cublasLtMatmulDescAttributes_t = int;
constexpr cublasLtMatmulDescAttributes_t CUBLASLT_MATMUL_DESC_TRANSA = 3;            // int32_t
constexpr cublasLtMatmulDescAttributes_t CUBLASLT_MATMUL_DESC_TRANSB = 4;            // int32_t
constexpr cublasLtMatmulDescAttributes_t CUBLASLT_MATMUL_DESC_A_SCALE_POINTER = 17;  // const void*
constexpr cublasLtMatmulDescAttributes_t CUBLASLT_MATMUL_DESC_B_SCALE_POINTER = 18;  // const void*
constexpr cublasLtMatmulDescAttributes_t CUBLASLT_MATMUL_DESC_A_SCALE_MODE = 31;     // int32_t (cublasLtMatmulMatrixScale_t)
constexpr cublasLtMatmulDescAttributes_t CUBLASLT_MATMUL_DESC_B_SCALE_MODE = 32;

// cublasLtMatmulMatrixScale_t (cublasLt.h): OUTER_VEC_32F = "vectors of CUDA_R_32F values ...
// applicable to matrices A and B, ... M and N elements respectively, and each (i, j)-th element
// of product of A and B is multiplied by i-th element of A scale and j-th element of B scale"
using cublasLtMatmulMatrixScale_t = int32_t;
constexpr cublasLtMatmulMatrixScale_t CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F = 3;

// cublasLtMatmulPreferenceAttributes_t (cublasLt.h)
using cublasLtMatmulPreferenceAttributes_t = int;
constexpr cublasLtMatmulPreferenceAttributes_t CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES = 1;  // uint64_t

// cublasLtMatmulAlgoConfigAttributes_t (cublasLt.h), read from a heuristic's algorithm by the
// row-invariant plans: "SPLITK_NUM: number of K splits, if != 1, SPLITK_NUM parts of matrix
// multiplication will be computed in parallel, and then results accumulated according to
// REDUCTION_SCHEME" (uint32_t, default 1); REDUCTION_SCHEME uint32_t, default NONE; ID int32_t
using cublasLtMatmulAlgoConfigAttributes_t = int;
constexpr cublasLtMatmulAlgoConfigAttributes_t CUBLASLT_ALGO_CONFIG_ID = 0;
constexpr cublasLtMatmulAlgoConfigAttributes_t CUBLASLT_ALGO_CONFIG_SPLITK_NUM = 2;
constexpr cublasLtMatmulAlgoConfigAttributes_t CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME = 3;
// cublasLtReductionScheme_t: NONE = "dot-product shall be performed in one sequence"
constexpr uint32_t CUBLASLT_REDUCTION_SCHEME_NONE = 0;

using cublasLtHandle_t = struct cublasLtContext*;
using cublasLtMatmulDesc_t = struct cublasLtMatmulDescOpaque*;
using cublasLtMatrixLayout_t = struct cublasLtMatrixLayoutOpaque*;
using cublasLtMatmulPreference_t = struct cublasLtMatmulPreferenceOpaque*;

/** cublasLtMatmulAlgo_t: uint64_t data[8] */
struct cublasLtMatmulAlgo_t {
  uint64_t data[8];
};
static_assert(sizeof(cublasLtMatmulAlgo_t) == 64, "cublasLtMatmulAlgo_t is 64 bytes (cublasLt.h)");

/** cublasLtMatmulHeuristicResult_t: algo; size_t workspaceSize; cublasStatus_t state; float wavesCount; int reserved[4] */
struct cublasLtMatmulHeuristicResult_t {
  cublasLtMatmulAlgo_t algo;
  size_t workspaceSize;
  cublasStatus_t state;
  float wavesCount;
  int reserved[4];
};
static_assert(sizeof(cublasLtMatmulHeuristicResult_t) == 96, "cublasLtMatmulHeuristicResult_t is 96 bytes (cublasLt.h)");
static_assert(offsetof(cublasLtMatmulHeuristicResult_t, workspaceSize) == 64, "cublasLtMatmulHeuristicResult_t::workspaceSize");
static_assert(offsetof(cublasLtMatmulHeuristicResult_t, state) == 72, "cublasLtMatmulHeuristicResult_t::state");

using cublasLtCreate_t = cublasStatus_t (*)(cublasLtHandle_t* lightHandle);
using cublasLtDestroy_t = cublasStatus_t (*)(cublasLtHandle_t lightHandle);
using cublasLtGetVersion_t = size_t (*)();
using cublasLtGetStatusName_t = const char* (*)(cublasStatus_t status);
using cublasLtGetStatusString_t = const char* (*)(cublasStatus_t status);
using cublasLtMatmulDescCreate_t = cublasStatus_t (*)(cublasLtMatmulDesc_t* matmulDesc, cublasComputeType_t computeType, cudaDataType scaleType);
using cublasLtMatmulDescDestroy_t = cublasStatus_t (*)(cublasLtMatmulDesc_t matmulDesc);
using cublasLtMatmulDescSetAttribute_t = cublasStatus_t (*)(cublasLtMatmulDesc_t matmulDesc, cublasLtMatmulDescAttributes_t attr, const void* buf,
                                                            size_t sizeInBytes);
using cublasLtMatrixLayoutCreate_t = cublasStatus_t (*)(cublasLtMatrixLayout_t* matLayout, cudaDataType type, uint64_t rows, uint64_t cols, int64_t ld);
using cublasLtMatrixLayoutDestroy_t = cublasStatus_t (*)(cublasLtMatrixLayout_t matLayout);
using cublasLtMatmulPreferenceCreate_t = cublasStatus_t (*)(cublasLtMatmulPreference_t* pref);
using cublasLtMatmulPreferenceDestroy_t = cublasStatus_t (*)(cublasLtMatmulPreference_t pref);
using cublasLtMatmulPreferenceSetAttribute_t = cublasStatus_t (*)(cublasLtMatmulPreference_t pref, cublasLtMatmulPreferenceAttributes_t attr, const void* buf,
                                                                  size_t sizeInBytes);
using cublasLtMatmulAlgoGetHeuristic_t = cublasStatus_t (*)(cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t operationDesc, cublasLtMatrixLayout_t Adesc,
                                                            cublasLtMatrixLayout_t Bdesc, cublasLtMatrixLayout_t Cdesc, cublasLtMatrixLayout_t Ddesc,
                                                            cublasLtMatmulPreference_t preference, int requestedAlgoCount,
                                                            cublasLtMatmulHeuristicResult_t heuristicResultsArray[], int* returnAlgoCount);
using cublasLtMatmulAlgoConfigGetAttribute_t = cublasStatus_t (*)(const cublasLtMatmulAlgo_t* algo, cublasLtMatmulAlgoConfigAttributes_t attr, void* buf,
                                                                  size_t sizeInBytes, size_t* sizeWritten);
/** "CUBLAS_STATUS_SUCCESS doesn't fully guarantee algo will run ...; but if cublasLtMatmulAlgoCheck fails, the algo will not run" */
using cublasLtMatmulAlgoCheck_t = cublasStatus_t (*)(cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t operationDesc, cublasLtMatrixLayout_t Adesc,
                                                     cublasLtMatrixLayout_t Bdesc, cublasLtMatrixLayout_t Cdesc, cublasLtMatrixLayout_t Ddesc,
                                                     const cublasLtMatmulAlgo_t* algo, cublasLtMatmulHeuristicResult_t* result);
using cublasLtMatmul_t = cublasStatus_t (*)(cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t computeDesc, const void* alpha, const void* A,
                                            cublasLtMatrixLayout_t Adesc, const void* B, cublasLtMatrixLayout_t Bdesc, const void* beta, const void* C,
                                            cublasLtMatrixLayout_t Cdesc, void* D, cublasLtMatrixLayout_t Ddesc, const cublasLtMatmulAlgo_t* algo,
                                            void* workspace, size_t workspaceSizeInBytes, cuda::CUstream stream);

struct CuBlasLtApi {
  cublasLtCreate_t cublasLtCreate = nullptr;
  cublasLtDestroy_t cublasLtDestroy = nullptr;
  cublasLtGetVersion_t cublasLtGetVersion = nullptr;
  /** optional (absent from old releases): messages fall back to the code */
  cublasLtGetStatusName_t cublasLtGetStatusName = nullptr;
  cublasLtGetStatusString_t cublasLtGetStatusString = nullptr;
  cublasLtMatmulDescCreate_t cublasLtMatmulDescCreate = nullptr;
  cublasLtMatmulDescDestroy_t cublasLtMatmulDescDestroy = nullptr;
  cublasLtMatmulDescSetAttribute_t cublasLtMatmulDescSetAttribute = nullptr;
  cublasLtMatrixLayoutCreate_t cublasLtMatrixLayoutCreate = nullptr;
  cublasLtMatrixLayoutDestroy_t cublasLtMatrixLayoutDestroy = nullptr;
  cublasLtMatmulPreferenceCreate_t cublasLtMatmulPreferenceCreate = nullptr;
  cublasLtMatmulPreferenceDestroy_t cublasLtMatmulPreferenceDestroy = nullptr;
  cublasLtMatmulPreferenceSetAttribute_t cublasLtMatmulPreferenceSetAttribute = nullptr;
  cublasLtMatmulAlgoGetHeuristic_t cublasLtMatmulAlgoGetHeuristic = nullptr;
  cublasLtMatmul_t cublasLtMatmul = nullptr;
  /** bound when present; the row-invariant plans need them (GemmMode::VendorInvariant), plain vendor plans do not */
  cublasLtMatmulAlgoConfigGetAttribute_t cublasLtMatmulAlgoConfigGetAttribute = nullptr;
  cublasLtMatmulAlgoCheck_t cublasLtMatmulAlgoCheck = nullptr;
};

}  // namespace hcsp::gpu::cublaslt
