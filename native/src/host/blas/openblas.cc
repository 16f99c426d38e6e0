#include "openblas.h"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>
#include <vector>

#include "../errors.h"

namespace hcsp::blas {

namespace {

const char* coretypeForThisCpu() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl")) return "SkylakeX";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "Haswell";
  return nullptr;
}

Library load() {
  const char* env = std::getenv("HCSP_BLAS_LIB");
  std::vector<std::string> candidates = env && *env ? std::vector<std::string>{env} : std::vector<std::string>{"libopenblas.so.0", "libopenblas.so"};
  if (!std::getenv("OPENBLAS_CORETYPE")) {
    if (const char* core = coretypeForThisCpu()) setenv("OPENBLAS_CORETYPE", core, 0);
  }
  std::string tried;
  for (const auto& name : candidates) {
    void* handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      tried += (tried.empty() ? "" : "; ") + name + " (" + dlerror() + ")";
      continue;
    }
    auto fn = reinterpret_cast<cblas::SgemmFn>(dlsym(handle, "cblas_sgemm"));
    if (!fn) {
      tried += (tried.empty() ? "" : "; ") + name + " (no cblas_sgemm)";
      dlclose(handle);
      continue;
    }
    const char* core = std::getenv("OPENBLAS_CORETYPE");
    return Library{fn, name, core ? core : ""};
  }
  fail(ErrorKind::Runtime, "no BLAS library found for --gemm blas: tried " + tried +
                               (env && *env ? "" : "; install OpenBLAS (Debian: apt-get install libopenblas0-pthread) or set HCSP_BLAS_LIB"));
}

}  // namespace

const Library& openblas() {
  static std::once_flag once;
  static Library lib;
  static std::string error;
  std::call_once(once, [] {
    try {
      lib = load();
    } catch (const Error& e) {
      error = e.what();
    }
  });
  if (!error.empty()) fail(ErrorKind::Runtime, error);
  return lib;
}

}  // namespace hcsp::blas
