// The lane-wise bf16 rounding and fp32 exp / sigmoid of vec_math.h for one vector width,
// written once: included inside a namespace that defines W (lanes) and the vector types F
// (float), I (int32), U (uint32) and H (uint16) of that width (vec_math.h: 4 lanes, the
// baseline ISA; hc_avx512.cc: 16 lanes, in its anonymous namespace, so that its AVX-512 copy
// is never linked in place of the baseline one). Every lane runs the scalar operation sequence
// of numerics/fp32_math.h and numerics/bf16.h (see vec_math.h).
// (no include guard: one inclusion per vector width)

/** v in every lane, bit for bit (F{} + v would turn -0 into +0) */
inline F splat(float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  return (F)(U{} + bits);
}
inline U splatU(uint32_t v) { return U{} + v; }

inline F loadBf16(const uint16_t* p) {
  H h;
  std::memcpy(&h, p, sizeof h);
  return (F)(__builtin_convertvector(h, U) << 16);
}

/** f32ToBf16 per lane, as its bit pattern in the high half of a 32-bit lane */
inline U bf16High(F x) {
  const U u = (U)x;
  const I nan = ((u & 0x7f800000u) == 0x7f800000u) & ((u & 0x007fffffu) != 0u);
  const U r = ((u + 0x7fffu + ((u >> 16) & 1u)) >> 16) << 16;
  return nan ? splatU(0x7fc00000u) : r;
}

inline void storeBf16(uint16_t* p, F x) {
  const H h = __builtin_convertvector(bf16High(x) >> 16, H);
  std::memcpy(p, &h, sizeof h);
}

/** roundBf16 per lane */
inline F roundBf16v(F x) { return (F)bf16High(x); }

/** fp32::ftz */
inline F ftz(F x) {
  const U u = (U)x;
  return (F)(u & 0x7fffffffu) < splat(fp32::MIN_NORMAL) ? (F)(u & 0x80000000u) : x;
}

/** fp32::expF32 */
inline F expF32(F x) {
  const I inRange = (x >= splat(fp32::EXP_UNDERFLOW)) & (x <= splat(fp32::EXP_OVERFLOW));  // false for NaN
  const F xs = inRange ? x : splat(0.0f);
  const F t = xs * fp32::LOG2E + 0.5f;  // in [-125.5, 128.5]
  const I ti = __builtin_convertvector(t, I);
  const I k = ti + (__builtin_convertvector(ti, F) > t);  // floor(t): a true compare is -1
  const F kf = __builtin_convertvector(k, F);
  const F r = (xs - kf * fp32::LN2_HI) - kf * fp32::LN2_LO;
  F p = splat(fp32::E7);
  p = p * r + fp32::E6;
  p = p * r + fp32::E5;
  p = p * r + fp32::E4;
  p = p * r + fp32::E3;
  p = p * r + fp32::E2;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  const I big = k > 127;  // -1 where the scalar form computes (p * 2^(k-1)) * 2
  const F scaled = p * (F)((U)(k + big + 127) << 23);
  F y = scaled * (F)(0x3f800000u + ((U)big & 0x00800000u));  // * 2 or * 1
  y = y < splat(fp32::MIN_NORMAL) ? splat(0.0f) : y;
  y = x < splat(fp32::EXP_UNDERFLOW) ? splat(0.0f) : y;
  y = x > splat(fp32::EXP_OVERFLOW) ? splat(__builtin_inff()) : y;
  return x != x ? x : y;
}

/** fp32::sigmoidF32 */
inline F sigmoidF32(F x) { return ftz(1.0f / (1.0f + expF32(-x))); }
