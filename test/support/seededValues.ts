// Seeded inputs of the fake-GPU tests (a linear congruential generator, so a failure
// reproduces from its seed): bf16 values and fp8 bytes that every kernel and vendor GEMM path
// under test takes as finite numbers.

/** seeded bf16 values in [-2, 2) */
export function bf16Values(n: number, seed: number): Uint16Array {
  let s = seed >>> 0;
  const out = new Uint16Array(n);
  const f = new Float32Array(1);
  const u = new Uint32Array(f.buffer);
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    f[0] = (s / 2 ** 32) * 4 - 2;
    out[i] = u[0] >>> 16;
  }
  return out;
}

/** seeded fp8 bytes that are finite in both e4m3 encodings (no 0x80, no 0x7f/0xff) */
export function fp8Values(n: number, seed: number): Uint8Array {
  let s = seed >>> 0;
  return Uint8Array.from({ length: n }, () => {
    s = (Math.imul(s, 22695477) + 1) >>> 0;
    const v = (s >>> 16) & 0xff;
    return v === 0x80 || (v & 0x7f) === 0x7f ? 0x38 : v;
  });
}
