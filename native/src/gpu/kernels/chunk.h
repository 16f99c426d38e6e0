// A lane's chunk of 8 bf16 values (canonical order v1's chunk, reduce.h): in a row of bf16 it
// is 16 contiguous bytes, so a kernel whose row starts 16-byte aligned loads and stores it at
// once (one global_load_dwordx4 / ld.global.v4 per lane; the 64 lanes' chunks side by side, so
// a row group reads 1 KiB contiguous per step). Elsewhere (a row's short last chunk, a row
// length that is not a multiple of 8, an unaligned tensor) value by value, the same values.
// Every loop over a chunk's values runs its 8 constant indices (a shorter one skips the rest):
// unrolled, the chunk stays in registers (an index the compiler cannot fold puts it in scratch).
#pragma once
#include "../vendor.h"

#include "reduce.h"

struct HcspBf16Chunk {
  uint16_t v[HCSP_CANONICAL_CHUNK];
};
/** a chunk's 8 fp8 values: 8 bytes, stored at once where aligned */
struct HcspFp8Chunk {
  uint8_t v[HCSP_CANONICAL_CHUNK];
};

/** whether p is 16-byte aligned (the vector path's condition, with the row length a multiple of 8) */
HCSP_HD bool hcspAligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

/** the 16 bytes at p (16-byte aligned) as one vector load; the 8 bytes at p (8-byte aligned) */
struct alignas(16) HcspU32x4 {
  uint32_t w[4];
};
HCSP_DEVICE HcspU32x4 hcspLoad16(const void* p) {
#if defined(HCSP_GPU_CUDA)
  const uint4 v = *static_cast<const uint4*>(p);
  return {{v.x, v.y, v.z, v.w}};
#else
  // a copy at a known alignment: one dwordx4 load on AMD, and no aliasing question on the host
  HcspU32x4 v;
  __builtin_memcpy(&v, __builtin_assume_aligned(p, 16), 16);
  return v;
#endif
}
HCSP_DEVICE void hcspStore16(void* p, const HcspU32x4& v) {
#if defined(HCSP_GPU_CUDA)
  *static_cast<uint4*>(p) = make_uint4(v.w[0], v.w[1], v.w[2], v.w[3]);
#else
  __builtin_memcpy(__builtin_assume_aligned(p, 16), &v, 16);
#endif
}
HCSP_DEVICE void hcspStore8(void* p, uint32_t lo, uint32_t hi) {
#if defined(HCSP_GPU_CUDA)
  *static_cast<uint2*>(p) = make_uint2(lo, hi);
#else
  const uint32_t v[2] = {lo, hi};
  __builtin_memcpy(__builtin_assume_aligned(p, 8), v, 8);
#endif
}

/** the chunk of `count` (<= 8) values at p; whole: count is 8 and p 16-byte aligned (the rest of c is zeros) */
HCSP_DEVICE HcspBf16Chunk hcspLoadChunk(const uint16_t* p, int count, bool whole) {
  HcspBf16Chunk c{};
  if (whole) {
    const HcspU32x4 v = hcspLoad16(p);
    for (int k = 0; k < HCSP_CANONICAL_CHUNK; k++) c.v[k] = static_cast<uint16_t>(v.w[k / 2] >> (16 * (k % 2)));
    return c;
  }
  for (int k = 0; k < HCSP_CANONICAL_CHUNK; k++) {
    if (k < count) c.v[k] = p[k];
  }
  return c;
}

/** stores the chunk's first `count` values at p (whole: at once, as hcspLoadChunk) */
HCSP_DEVICE void hcspStoreChunk(uint16_t* p, const HcspBf16Chunk& c, int count, bool whole) {
  if (whole) {
    HcspU32x4 v;
    for (int i = 0; i < 4; i++) v.w[i] = static_cast<uint32_t>(c.v[2 * i]) | (static_cast<uint32_t>(c.v[2 * i + 1]) << 16);
    hcspStore16(p, v);
    return;
  }
  for (int k = 0; k < HCSP_CANONICAL_CHUNK; k++) {
    if (k < count) p[k] = c.v[k];
  }
}

/** as hcspStoreChunk, for fp8 bytes (whole: count 8 and p 8-byte aligned) */
HCSP_DEVICE void hcspStoreFp8Chunk(uint8_t* p, const HcspFp8Chunk& c, int count, bool whole) {
  if (whole) {
    uint32_t w[2] = {0, 0};
    for (int k = 0; k < HCSP_CANONICAL_CHUNK; k++) w[k / 4] |= static_cast<uint32_t>(c.v[k]) << (8 * (k % 4));
    hcspStore8(p, w[0], w[1]);
    return;
  }
  for (int k = 0; k < HCSP_CANONICAL_CHUNK; k++) {
    if (k < count) p[k] = c.v[k];
  }
}
