// OpenBLAS loaded at run time (dlopen) for the GEMM mode 'blas': HCSP_BLAS_LIB names the
// library, else the system's libopenblas.so.0. Debian's OpenBLAS misdetects some VMs' CPUs
// (Prescott kernels, 10x slower); when OPENBLAS_CORETYPE is unset it is set from the CPU's
// features before the library loads (architecture.md, "Host BLAS").
#pragma once
#include <string>

#include "cblas_abi.h"

namespace hcsp::blas {

struct Library {
  cblas::SgemmFn sgemm;
  std::string path;
  std::string coretype;
};

/** the loaded library, loading it on first use; an HCSP_RUNTIME error names what was tried */
const Library& openblas();

}  // namespace hcsp::blas
