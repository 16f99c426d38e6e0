// attnCausalQsa's fast kernel (kernels/attention_tiled.cu: flash-style, 32-row query tiles
// against 32-key tiles of the kept keys in shared memory, online softmax in fp32) on the
// emulated device, against core's CPU reference and its float64 evaluation: QSA selections
// that drop blocks (rows of one tile keeping different blocks, blocks straddling key tiles,
// blocks longer than a tile) and none (dense causal), T not a multiple of the tile and under
// one tile, GQA groups 1-12, head dims 16-256 (the model's 256) and one not a multiple of the
// lanes; within the declared tolerance (fastKernelsPrecision.ts), no farther from float64 than
// the reference on most differing elements, and an error that does not grow with T faster than
// the reference's. The exact mode still gives the reference's bits; a head dim past the tiled
// kernel's takes the exact kernel in fast mode too.
import { bf16ToF32, bf16UlpAt, cpuKernel, exactKernel, Rng, widenTensor, type Tensor } from '@hcsp/core';
import { describe, expect, it } from 'vitest';
import { FAST_KERNEL_TOLERANCES } from './fastKernelsPrecision.ts';
import { loadNativeAddon, type GpuDevice } from './nativeAddon.ts';

const addon = loadNativeAddon();
const fast = addon.openGpu('emulated', { kernels: 'fast' });
const exact = addon.openGpu('emulated', { kernels: 'exact' });
const TOLERANCE = FAST_KERNEL_TOLERANCES.attnCausalQsa!.maxUlp;

interface Case {
  T: number;
  heads: number;
  kvHeads: number;
  hd: number;
  ratio: number;
  width: number;
  seed: number;
}

/** a random valid selection: row t lists min(width, floor((t+1)/ratio)) distinct blocks it can see, ascending, then -1 */
function randomSelection(T: number, ratio: number, width: number, rng: Rng): Int32Array {
  const blocks = new Int32Array(T * width).fill(-1);
  for (let t = 0; t < T; t++) {
    const nb = Math.floor((t + 1) / ratio);
    const pool = Array.from({ length: nb }, (_, b) => b);
    for (let i = pool.length - 1; i > 0; i--) {
      const j = rng.int(0, i + 1);
      [pool[i], pool[j]] = [pool[j], pool[i]];
    }
    const kept = pool.slice(0, Math.min(width, nb)).sort((a, b) => a - b);
    blocks.set(kept, t * width);
  }
  return blocks;
}

function inputsOf(c: Case): { inputs: Tensor[]; attrs: Record<string, unknown> } {
  const rng = new Rng(c.seed);
  // q at std 2 over hd dims: scores of a few units, so the softmax is neither flat nor one-hot
  const q: Tensor = { dtype: 'bf16', shape: [c.T, c.heads * c.hd], data: rng.fillBf16Normal(c.T * c.heads * c.hd, 2) };
  const k: Tensor = { dtype: 'bf16', shape: [c.T, c.kvHeads * c.hd], data: rng.fillBf16Normal(c.T * c.kvHeads * c.hd, 1) };
  const v: Tensor = { dtype: 'bf16', shape: [c.T, c.kvHeads * c.hd], data: rng.fillBf16Normal(c.T * c.kvHeads * c.hd, 1) };
  const blocks: Tensor = { dtype: 'i32', shape: [c.T, c.width], data: randomSelection(c.T, c.ratio, c.width, rng) };
  const attrs = { heads: c.heads, kvHeads: c.kvHeads, headDim: c.hd, scale: 1 / Math.sqrt(c.hd), compressRatio: c.ratio, width: c.width };
  return { inputs: [q, k, v, blocks], attrs };
}

async function onGpu(gpu: GpuDevice, inputs: Tensor[], attrs: Record<string, unknown>): Promise<Uint16Array> {
  const handles = inputs.map((t) => addon.upload(t.dtype, t.shape, t.data, gpu));
  try {
    const [o] = await addon.run('attnCausalQsa', handles, attrs, 'exact', gpu);
    const data = new Uint16Array(addon.download(o!).slice(0));
    addon.free(o!);
    return data;
  } finally {
    for (const h of handles) addon.free(h);
  }
}

interface Measured {
  /** elements and those whose bits differ from the reference */
  count: number;
  differing: number;
  /** max and mean (over all elements) |fast - ref| in bf16 ulps of the row's largest |ref| */
  maxUlp: number;
  meanUlp: number;
  /** each side's max row-scaled ulp error against float64 */
  fastErr: number;
  refErr: number;
  /** of the differing elements: closer to float64 with the fast kernel, with the reference, as close */
  fastCloser: number;
  refCloser: number;
  tied: number;
}

/** fast against the reference and both against float64, rows the op's [T, heads * hd] rows (the cross-backend suites' unit) */
async function measure(c: Case): Promise<Measured> {
  const { inputs, attrs } = inputsOf(c);
  const ref = cpuKernel('attnCausalQsa')(inputs, attrs)[0]!.data as Uint16Array;
  const got = await onGpu(fast, inputs, attrs);
  const f64 = exactKernel('attnCausalQsa')(inputs.map(widenTensor), attrs)[0]!.data as Float64Array;
  const cols = c.heads * c.hd;
  const m: Measured = { count: ref.length, differing: 0, maxUlp: 0, meanUlp: 0, fastErr: 0, refErr: 0, fastCloser: 0, refCloser: 0, tied: 0 };
  let sumUlp = 0;
  for (let t = 0; t < c.T; t++) {
    let scale = 0;
    let scale64 = 0;
    for (let j = 0; j < cols; j++) {
      scale = Math.max(scale, Math.abs(bf16ToF32(ref[t * cols + j])));
      scale64 = Math.max(scale64, Math.abs(f64[t * cols + j]));
    }
    const ulp = bf16UlpAt(scale);
    const ulp64 = bf16UlpAt(scale64);
    for (let j = 0; j < cols; j++) {
      const i = t * cols + j;
      const a = bf16ToF32(got[i]);
      const e = bf16ToF32(ref[i]);
      const da = Math.abs(a - f64[i]);
      const de = Math.abs(e - f64[i]);
      m.fastErr = Math.max(m.fastErr, da / ulp64);
      m.refErr = Math.max(m.refErr, de / ulp64);
      if (got[i] === ref[i]) continue;
      m.differing++;
      const u = Math.abs(a - e) / ulp;
      sumUlp += u;
      m.maxUlp = Math.max(m.maxUlp, u);
      if (da < de) m.fastCloser++;
      else if (de < da) m.refCloser++;
      else m.tied++;
    }
  }
  m.meanUlp = sumUlp / m.count;
  return m;
}

const row = (label: string, m: Measured): string =>
  `${label}: max ${m.maxUlp.toFixed(3)} / mean ${m.meanUlp.toExponential(2)} row-scaled ulp, bit-exact ${(((m.count - m.differing) / m.count) * 100).toFixed(1)}%, ` +
  `differing ${m.differing}: closer to float64 fast ${m.fastCloser}, reference ${m.refCloser}, tied ${m.tied}; vs float64 fast ${m.fastErr.toFixed(3)}, reference ${m.refErr.toFixed(3)}`;

describe('attnCausalQsa fast kernel (tiled, online softmax) on the emulated device', () => {
  const CASES: [string, Case][] = [
    ['QSA dropping blocks, GQA 2, hd 64', { T: 100, heads: 4, kvHeads: 2, hd: 64, ratio: 4, width: 6, seed: 1 }],
    ['dense causal (nothing dropped), T 77, hd 32', { T: 77, heads: 2, kvHeads: 1, hd: 32, ratio: 4, width: 20, seed: 2 }],
    ['T 5 under one tile, the model hd 256, GQA 3', { T: 5, heads: 3, kvHeads: 1, hd: 256, ratio: 4, width: 1, seed: 3 }],
    ['ratio 3 (blocks straddle key tiles), hd 40, GQA 3', { T: 70, heads: 6, kvHeads: 2, hd: 40, ratio: 3, width: 3, seed: 4 }],
    ['ratio 64 (a block over two key tiles), hd 16', { T: 200, heads: 2, kvHeads: 2, hd: 16, ratio: 64, width: 1, seed: 5 }],
    ['Flash-Next heads per KV head (12), hd 256, dropping', { T: 96, heads: 12, kvHeads: 1, hd: 256, ratio: 4, width: 8, seed: 6 }],
    ['T 33 (one row past a tile), hd 7', { T: 33, heads: 1, kvHeads: 1, hd: 7, ratio: 2, width: 4, seed: 7 }],
  ];
  for (const [label, c] of CASES) {
    it(`${label}: within the declared tolerance, not farther from float64 than the reference`, async () => {
      const m = await measure(c);
      console.log(row(label, m));
      expect(m.maxUlp, row(label, m)).toBeLessThanOrEqual(TOLERANCE);
      // most differing elements: the fast kernel at least as close to float64 as the reference
      expect(m.fastCloser + m.tied, row(label, m)).toBeGreaterThanOrEqual(m.refCloser);
      expect(m.fastErr, row(label, m)).toBeLessThanOrEqual(Math.max(m.refErr * 1.5, 1));
    }, 120_000);
  }

  it("the error against float64 does not grow with T faster than the reference's", async () => {
    const ratios: string[] = [];
    let first = 0;
    for (const T of [64, 256, 1024, 2048]) {
      const m = await measure({ T, heads: 2, kvHeads: 1, hd: 64, ratio: 4, width: 32, seed: 10 + T });
      ratios.push(
        `T ${T}: fast ${m.fastErr.toFixed(3)}, reference ${m.refErr.toFixed(3)} (${m.differing}/${m.count} differ, max ${m.maxUlp}, closer to float64 fast ${m.fastCloser} / reference ${m.refCloser})`,
      );
      const r = m.fastErr / Math.max(m.refErr, 0.5);
      if (T === 64) first = r;
      expect(r, ratios.join('; ')).toBeLessThanOrEqual(Math.max(first, 1) * 1.5);
    }
    console.log(`growth with T: ${ratios.join('; ')}`);
  }, 300_000);

  it("kernels exact still gives the reference's bits (a dropping case)", async () => {
    const { inputs, attrs } = inputsOf({ T: 96, heads: 12, kvHeads: 1, hd: 256, ratio: 4, width: 8, seed: 6 });
    const want = cpuKernel('attnCausalQsa')(inputs, attrs)[0]!.data as Uint16Array;
    expect(Buffer.from((await onGpu(exact, inputs, attrs)).buffer).equals(Buffer.from(want.buffer))).toBe(true);
    // and the fast kernel does reorder (else this file would test nothing)
    expect(Buffer.from((await onGpu(fast, inputs, attrs)).buffer).equals(Buffer.from(want.buffer))).toBe(false);
  });

  it("a head dim past the tiled kernel's (264) takes the exact kernel in fast mode: the reference's bits", async () => {
    const { inputs, attrs } = inputsOf({ T: 40, heads: 2, kvHeads: 1, hd: 264, ratio: 4, width: 3, seed: 8 });
    const want = cpuKernel('attnCausalQsa')(inputs, attrs)[0]!.data as Uint16Array;
    expect(Buffer.from((await onGpu(fast, inputs, attrs)).buffer).equals(Buffer.from(want.buffer))).toBe(true);
  });

  it("a malformed selection fails the run with the exact kernel's message", async () => {
    const { inputs, attrs } = inputsOf({ T: 40, heads: 2, kvHeads: 1, hd: 16, ratio: 4, width: 3, seed: 9 });
    const blocks = Int32Array.from(inputs[3]!.data as Int32Array);
    blocks[20 * 3 + 1] = blocks[20 * 3]; // row 20: not ascending
    const bad = [...inputs.slice(0, 3), { ...inputs[3]!, data: blocks }];
    const messages: string[] = [];
    for (const gpu of [exact, fast])
      messages.push(
        await onGpu(gpu, bad, attrs).then(
          () => 'no error',
          (e: Error) => e.message,
        ),
      );
    expect(messages[0]).toMatch(/attnCausalQsa/);
    expect(messages[1]).toBe(messages[0]);
  });
});
