#include "cpu_features.h"

#include <cstdlib>
#include <string>

#include "errors.h"

namespace hcsp {

namespace {
Isa detect() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return Isa::Avx512;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return Isa::Avx2;
  return Isa::Portable;
}

Isa choose() {
  const Isa best = detect();
  const char* env = std::getenv("HCSP_NATIVE_ISA");
  if (!env || !*env) return best;
  const std::string want = env;
  Isa asked;
  if (want == "avx512")
    asked = Isa::Avx512;
  else if (want == "avx2")
    asked = Isa::Avx2;
  else if (want == "portable")
    asked = Isa::Portable;
  else
    fail(ErrorKind::Attr, "HCSP_NATIVE_ISA must be avx512, avx2 or portable, got '" + want + "'");
  if (static_cast<int>(asked) > static_cast<int>(best)) {
    fail(ErrorKind::Unsupported, "HCSP_NATIVE_ISA=" + want + " but this CPU supports at most " + isaName(best));
  }
  return asked;
}
}  // namespace

Isa gemmIsa() {
  static const Isa isa = choose();
  return isa;
}

const char* isaName(Isa isa) {
  switch (isa) {
    case Isa::Avx512:
      return "avx512";
    case Isa::Avx2:
      return "avx2";
    case Isa::Portable:
      return "portable";
  }
  return "portable";
}

}  // namespace hcsp
