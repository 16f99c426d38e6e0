// The fp8 formats by name and by tensor dtype, for host-side checks and allocations (the
// encode/decode math is numerics/fp8.h, shared with the GPU kernels).
#pragma once
#include <string>

#include "../numerics/fp8.h"
#include "errors.h"
#include "tensor.h"

namespace hcsp {

/** the format named by a `format` attribute */
inline const Fp8Format& fp8Format(const std::string& name) {
  if (name == "e4m3fn") return E4M3FN;
  if (name == "e4m3fnuz") return E4M3FNUZ;
  fail(ErrorKind::Attr, "unknown fp8 format '" + name + "' (expected 'e4m3fn' or 'e4m3fnuz')");
}

inline const Fp8Format& fp8FormatOfDType(DType d) {
  if (d == DType::FP8E4M3FN) return E4M3FN;
  if (d == DType::FP8E4M3FNUZ) return E4M3FNUZ;
  fail(ErrorKind::DType, std::string("dtype '") + dtypeName(d) + "' is not an fp8 dtype");
}

/** the tensor dtype that stores `f` */
inline DType fp8DType(const Fp8Format& f) { return f.fnuz ? DType::FP8E4M3FNUZ : DType::FP8E4M3FN; }

}  // namespace hcsp
