import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bf16ToF32, canonicalSumF32, Rng } from '@hcsp/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadNativeAddon } from './nativeAddon.ts';

// The native sums of squares in canonical order v1 (native/src/numerics/canonical_sum.h, the
// scalar definition the GPU kernels and the host's portable path run, and its generic one-thread
// form sumTerms; host/kernels/canonical_sumsq.h, its AVX2 and AVX-512 forms), compiled into a probe that prints the raw
// fp32 sums, against core's canonicalSumF32 bit for bit on arrays built so that any other
// order, lane layout or rounding gives other bits: the HC norm's outputs show only 8 bits of
// the sum, so this is where a wrong lane or an unfused square would show.

const root = join(dirname(fileURLToPath(import.meta.url)), '../../..');
let dir = '';
let probe = '';

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'hcsp-sumsq-'));
  probe = join(dir, 'probe');
  const cxx = process.env.CXX || 'c++';
  const r = spawnSync(
    cxx,
    [
      '-std=c++17',
      '-O2',
      '-ffp-contract=off',
      '-fno-fast-math',
      '-I',
      join(root, 'native/src'),
      join(root, 'test/support/canonicalSumsqProbe.cc'),
      '-o',
      probe,
    ],
    { encoding: 'utf8', timeout: 180_000 },
  );
  if (r.status !== 0) throw new Error(`compiling the probe with ${cxx} failed: ${r.error?.message ?? r.stderr}`);
}, 200_000);

afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** each path's fp32 bits per array (null: a path this CPU lacks) */
function runProbe(arrays: Uint16Array[]): { scalar: number; avx2: number | null; avx512: number | null; sumTerms: number }[] {
  const parts: Buffer[] = [];
  for (const a of arrays) {
    const head = Buffer.alloc(4);
    head.writeUInt32LE(a.length);
    parts.push(head, Buffer.from(a.buffer, a.byteOffset, a.byteLength));
  }
  const r = spawnSync(probe, [], { input: Buffer.concat(parts), encoding: 'utf8', timeout: 60_000, maxBuffer: 1 << 26 });
  if (r.status !== 0) throw new Error(`the probe failed: ${r.error?.message ?? r.stderr}`);
  return r.stdout
    .trim()
    .split('\n')
    .map((line) => {
      const [s, a2, a5, terms] = line.split(' ').map((w) => (w === '-' ? null : parseInt(w, 16)));
      return { scalar: s!, avx2: a2, avx512: a5, sumTerms: terms! };
    });
}

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);
const bitsOf = (v: number): number => {
  f32[0] = v;
  return u32[0];
};
const isNanBits = (u: number): boolean => (u & 0x7f800000) === 0x7f800000 && (u & 0x7fffff) !== 0;
const square = (x: Uint16Array) => (j: number) => {
  const v = bf16ToF32(x[j]);
  return v * v;
};
const sequential = (x: Uint16Array): number => {
  let acc = 0;
  for (let j = 0; j < x.length; j++) acc = Math.fround(acc + square(x)(j));
  return acc;
};

/** bf16 bits of m * 2^e for m in [1, 2) on the bf16 grid (e in the normal range) */
const bfPow = (rng: Rng, e: number): number => ((e + 127) << 7) | rng.int(0, 128);

function arrays(): { kind: string; x: Uint16Array }[] {
  const rng = new Rng(2205);
  const lengths = [0, 1, 7, 8, 9, 63, 511, 512, 513, 1023, 1024, 1030, 2560, 2561, 3001];
  for (let i = 0; i < 25; i++) lengths.push(rng.int(0, 3200));
  const out: { kind: string; x: Uint16Array }[] = [];
  const make = (kind: string, n: number, value: (j: number) => number) => out.push({ kind, x: Uint16Array.from({ length: n }, (_, j) => value(j)) });
  for (const n of lengths) {
    // magnitudes over 2^-20 .. 2^20: every add rounds, the order decides which bits survive
    make('wide magnitudes', n, () => bfPow(rng, rng.int(-20, 21)) | (rng.int(0, 2) << 15));
    // squares below fp32's normal range: fl(v * v) rounds, fma(v, v, acc) does not
    make('tiny values', n, () => bfPow(rng, rng.int(-80, -60)));
    // one large value per array: what its lane adds after it is lost, the other lanes keep theirs
    const big = rng.int(0, Math.max(1, n));
    make('a large value among small ones', n, (j) => (j === big ? bfPow(rng, 12) : bfPow(rng, rng.int(-2, 1))));
    // any bit pattern: subnormals, infinities, NaN, -0
    make('any bits', n, () => rng.int(0, 0x10000));
  }
  return out;
}

describe('native sums of squares in canonical order v1', () => {
  it('every path gives canonicalSumF32 bit for bit, where the sequential order mostly differs', () => {
    const cases = arrays();
    const got = runProbe(cases.map((c) => c.x));
    expect(got.length).toBe(cases.length);
    let orderSensitive = 0;
    cases.forEach((c, i) => {
      const want = bitsOf(canonicalSumF32(c.x.length, square(c.x)));
      if (bitsOf(sequential(c.x)) !== want) orderSensitive++;
      for (const [path, bits] of Object.entries(got[i])) {
        if (bits === null) continue;
        const what = `${path}, ${c.kind}, n ${c.x.length}: 0x${bits.toString(16)}, want 0x${want.toString(16)}`;
        // NaN's payload is not part of the order (JavaScript has one NaN)
        if (isNanBits(want)) expect(isNanBits(bits), what).toBe(true);
        else expect(bits, what).toBe(want);
      }
    });
    expect(orderSensitive).toBeGreaterThan(cases.length / 2);
  });

  it('runs the vector paths the host device would choose on this CPU', () => {
    const [r] = runProbe([Uint16Array.from({ length: 9 }, () => 0x3f80)]);
    const isa = loadNativeAddon().info().isa;
    expect(r.scalar).toBe(bitsOf(9));
    expect(r.sumTerms).toBe(bitsOf(9));
    expect(r.avx2 !== null).toBe(isa === 'avx2' || isa === 'avx512');
    expect(r.avx512 !== null).toBe(isa === 'avx512');
  });
});
