// Which vector unit the GEMMs use, chosen once at run time from the CPU's features
// (HCSP_NATIVE_ISA=avx512|avx2|portable forces one, for tests and benchmarks).
#pragma once

namespace hcsp {

enum class Isa { Portable, Avx2, Avx512 };

Isa gemmIsa();
const char* isaName(Isa isa);

}  // namespace hcsp
