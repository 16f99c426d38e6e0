// The one CBLAS entry point the host device's BLAS GEMM mode calls, declared by the project
// (the library is loaded at run time, so no cblas.h is needed to build). The enum values are
// the CBLAS standard's (netlib cblas.h), which OpenBLAS keeps.
#pragma once

namespace hcsp::cblas {

enum Order { RowMajor = 101, ColMajor = 102 };
enum Transpose { NoTrans = 111, Trans = 112 };

using SgemmFn = void (*)(int order, int transA, int transB, int m, int n, int k, float alpha, const float* a, int lda, const float* b, int ldb, float beta,
                         float* c, int ldc);

static_assert(sizeof(int) == 4, "CBLAS_INDEX is a 32-bit int in the LP64 OpenBLAS build");

}  // namespace hcsp::cblas
