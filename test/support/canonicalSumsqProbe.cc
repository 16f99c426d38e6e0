// Test probe of native/src/host/kernels/canonical_sumsq.h (packages/backend-rocm/src/
// canonicalSumsq.test.ts compiles and runs it): reads arrays of bf16 bits from stdin, each a
// little-endian uint32 count then its uint16 values, and prints per array one line with the
// fp32 bits (hex) of its sum of squares in canonical order v1 from the scalar definition, the
// AVX2 path, the AVX-512 path ('-' for a path this CPU lacks) and the generic sumTerms (the
// one-thread form other reductions use) over the same squares.
#include <cstdint>
#include <cstdio>
#include <vector>

#include "host/kernels/canonical_sumsq.h"

int main() {
  __builtin_cpu_init();
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  const bool avx512 = __builtin_cpu_supports("avx512f");
  uint32_t n;
  while (std::fread(&n, sizeof n, 1, stdin) == 1) {
    std::vector<uint16_t> x(n);
    if (n > 0 && std::fread(x.data(), sizeof(uint16_t), n, stdin) != n) {
      std::fprintf(stderr, "canonicalSumsqProbe: an array of %u values ends early\n", n);
      return 1;
    }
    const auto bits = [](float f) { return static_cast<unsigned>(hcsp::floatBits(f)); };
    std::printf("%08x", bits(hcsp::canonical::sumSquaresBf16(x.data(), n)));
    if (avx2) std::printf(" %08x", bits(hcsp::canonical::sumSquaresBf16Avx2(x.data(), n)));
    else std::printf(" -");
    if (avx512) std::printf(" %08x", bits(hcsp::canonical::sumSquaresBf16Avx512(x.data(), n)));
    else std::printf(" -");
    const uint16_t* xs = x.data();
    const float terms = hcsp::canonical::sumTerms(n, [xs](float acc, int64_t j) { return hcsp::canonical::addSquareBf16(acc, xs[j]); });
    std::printf(" %08x\n", bits(terms));
  }
  return 0;
}
