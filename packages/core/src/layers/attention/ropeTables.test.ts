import { describe, expect, it } from 'vitest';
import { getConfig } from '../../config/presets.ts';
import { bf16ArrayToF32 } from '../../numerics/bf16.ts';
import { ropeInvFreq, ropeTablesBf16 } from './ropeTables.ts';

// Expected bits from attentionExpectations.py (numpy float32, glibc powf, Python's float64
// cos/sin rounded to fp32 then bf16), run once and pasted here.
const INV_FREQ_64_1E7 = [
  0x3f800000, 0x3f1ab32b, 0x3ebaf81b, 0x3e61f835, 0x3e088d77, 0x3da50956, 0x3d47763f, 0x3cf11177, 0x3c91ad39, 0x3c301052, 0x3bd4ca15, 0x3b80967d, 0x3b1b690d,
  0x3abbd3ed, 0x3a6301e2, 0x3a092e02, 0x39a5cb60, 0x394860c1, 0x38f22ce2, 0x3892587e, 0x3830df52, 0x37d5c441, 0x37812dab, 0x371c1fc4, 0x36bcb0c1, 0x36640cc6,
  0x3609cf4a, 0x35a68e4c, 0x35494c57, 0x34f3499d, 0x3493048e, 0x3431af44,
];
const COS_3000 = [
  0xbf7a, 0xbf7b, 0xbf20, 0xbf28, 0xbef4, 0xbf7d, 0xbbcb, 0x3f73, 0xbf80, 0x3f2e, 0x3f4f, 0x3f33, 0x3f2d, 0xbece, 0xbf5b, 0x3a6c, 0x3f15, 0x3f57, 0x3f71,
  0x3f7a, 0x3f7e, 0x3f7f, 0x3f80, 0x3f80, 0x3f80, 0x3f80, 0x3f80, 0x3f80, 0x3f80, 0x3f80, 0x3f80, 0x3f80,
];
const SIN_3000 = [
  0x3e60, 0xbe42, 0x3f47, 0x3f41, 0xbf61, 0x3e19, 0x3f80, 0x3ea0, 0x3d70, 0x3f3c, 0x3f17, 0xbf37, 0x3f3d, 0xbf6a, 0x3f04, 0x3f80, 0x3f50, 0x3f0b, 0x3eae,
  0x3e55, 0x3e01, 0x3d9c, 0x3d3d, 0x3ce5, 0x3c8a, 0x3c27, 0x3bca, 0x3b74, 0x3b13, 0x3ab2, 0x3a57, 0x3a02,
];
const COS_3269 = [
  0xbe30, 0xbf51, 0x3f80, 0x3ec1, 0xbf3b, 0x3f65, 0xbf03, 0xbebe, 0xbc4d, 0xbf57, 0xbf39, 0x3f77, 0x3dd0, 0xbce4, 0xbf74, 0xbe0f, 0x3f03, 0x3f50, 0x3f6e,
  0x3f79, 0x3f7e, 0x3f7f, 0x3f80, 0x3f80, 0x3f80, 0x3f80, 0x3f80, 0x3f80, 0x3f80, 0x3f80, 0x3f80, 0x3f80,
];
const SIN_3269 = [
  0x3f7c, 0x3f14, 0xbd51, 0xbf6d, 0x3f2f, 0xbee5, 0x3f5c, 0x3f6e, 0x3f80, 0xbf0a, 0x3f31, 0x3e85, 0x3f7f, 0xbf80, 0x3e9d, 0x3f7e, 0x3f5c, 0x3f16, 0x3ebd,
  0x3e68, 0x3e0d, 0x3daa, 0x3d4e, 0x3cf9, 0x3c97, 0x3c36, 0x3bdc, 0x3b85, 0x3b21, 0x3ac2, 0x3a6b, 0x3a0e,
];

const bitsOf = (a: Float32Array) => Array.from(new Uint32Array(a.buffer, a.byteOffset, a.length));
const flashNext = getConfig('flash-next');

describe('ropeInvFreq', () => {
  it("is HF's fp32 recipe: fr(1 / powf(theta, fr(2i / d))), for Flash-Next's 64 dims and theta 1e7", () => {
    expect(bitsOf(ropeInvFreq(64, 1e7))).toEqual(INV_FREQ_64_1E7);
    // rounding 1 / theta^(2i/d) once in float64 gives another fp32 for 15 of them, e.g. i = 2
    expect(Math.fround(1 / 1e7 ** (4 / 64))).not.toBe(ropeInvFreq(64, 1e7)[2]);
    expect(() => ropeInvFreq(3, 1e7)).toThrow(/positive even integer, got 3/);
  });
});

describe('ropeTablesBf16', () => {
  it('matches the independently computed bf16 cos/sin at positions 3000 and 3269', () => {
    const { cos, sin } = ropeTablesBf16(flashNext, 3270);
    expect(cos.dtype).toBe('bf16');
    expect(cos.shape).toEqual([3270, 32]);
    const row = (t: typeof cos, p: number) => Array.from((t.data as Uint16Array).subarray(p * 32, (p + 1) * 32));
    expect(row(cos, 3000)).toEqual(COS_3000);
    expect(row(sin, 3000)).toEqual(SIN_3000);
    expect(row(cos, 3269)).toEqual(COS_3269);
    // sin at 3269, i = 15: torch's CPU sinf (Sleef u10) rounds to 0x3f7d, the correctly
    // rounded fp32 sin to 0x3f7e (the one entry of positions < 8192 where they differ)
    expect(row(sin, 3269)).toEqual(SIN_3269);
    expect(row(sin, 3269)[15]).toBe(0x3f7e);
  });

  it('is within a bf16 rounding of float64 cos/sin of the fp32 angles; position 0 is the identity', () => {
    const T = 20;
    const ROPE = 8;
    const base = getConfig('tiny');
    const config = { ...base, attention: { ...base.attention, ropeDims: ROPE, ropeTheta: 1e4 } };
    const { cos, sin } = ropeTablesBf16(config, T);
    const half = ROPE / 2;
    expect(cos.shape).toEqual([T, half]);
    const c = bf16ArrayToF32(cos.data as Uint16Array);
    const s = bf16ArrayToF32(sin.data as Uint16Array);
    for (let i = 0; i < half; i++) {
      expect(c[i]).toBe(1);
      expect(s[i]).toBe(0);
    }
    for (let pos = 0; pos < T; pos++) {
      for (let i = 0; i < half; i++) {
        const angle = pos * 1e4 ** (-(2 * i) / ROPE);
        // half a bf16 ulp (at most 2^-8 relative) plus the fp32 angle's error
        const tol = (v: number) => 2 ** -8 * Math.max(Math.abs(v), 2 ** -126) + 3 * 2 ** -24 * angle;
        expect(Math.abs(c[pos * half + i] - Math.cos(angle))).toBeLessThanOrEqual(tol(Math.cos(angle)));
        expect(Math.abs(s[pos * half + i] - Math.sin(angle))).toBeLessThanOrEqual(tol(Math.sin(angle)));
      }
    }
    expect(() => ropeTablesBf16(config, 0)).toThrow(/tokens must be a positive integer, got 0/);
  });
});
