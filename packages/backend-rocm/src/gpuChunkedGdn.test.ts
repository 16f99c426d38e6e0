// The chunked GatedDeltaNet (kernels/gdn_chunked.cu, gdnRecurrence with kernels 'fast') on the
// emulated device, which runs the same .cu sources as hipcc, clang-19 and nvcc: against the CPU
// reference (row-scaled bf16 ulps within the declared tolerance) and against the float64
// evaluation (core's exactKernel), at T below one chunk, at one chunk and either side of it,
// and over many chunks; GQA heads; no decay, mild and strong decay. The chunk form reorders
// the reference's sums, so it is held to the float64 value: no farther from it than the
// reference by more than a small factor, and that factor must not grow with T. The exact
// mode's kernel keeps the reference's bits.
import { cpuKernel, exactKernel, GDN_L2NORM_EPS, Rng, widenTensor, type Tensor } from '@hcsp/core';
import { diffTensors } from '@hcsp/core/xcheck';
import { describe, expect, it } from 'vitest';
import { FAST_KERNEL_TOLERANCES } from './fastKernelsPrecision.ts';
import { loadNativeAddon, type GpuDevice } from './nativeAddon.ts';

const addon = loadNativeAddon();

interface Heads {
  keyHeads: number;
  valueHeads: number;
  keyDim: number;
  valueDim: number;
}
type Decay = 'none' | 'mild' | 'strong';

const tensor = (dtype: Tensor['dtype'], shape: number[], data: Tensor['data']): Tensor => ({ dtype, shape, data });

/** the op's inputs: qkv like a conv output, g per decay kind (log decay per token, <= 0), beta in (0, 1) */
function inputs(T: number, h: Heads, decay: Decay, seed: number): { ins: Tensor[]; attrs: Record<string, unknown> } {
  const rng = new Rng(seed);
  const C = 2 * h.keyHeads * h.keyDim + h.valueHeads * h.valueDim;
  const qkv = tensor('bf16', [T, C], rng.fillBf16Normal(T * C, 1));
  const g = new Float32Array(T * h.valueHeads);
  // mild: per-token decay factors 0.6-1 (what the model's gates give); strong: 0.0003-0.1
  for (let i = 0; i < g.length; i++) g[i] = decay === 'none' ? 0 : decay === 'mild' ? -0.5 * rng.nextFloat() : -(2.3 + 6 * rng.nextFloat());
  const beta = tensor(
    'bf16',
    [T, h.valueHeads],
    rng.fillBf16Normal(T * h.valueHeads, 1).map((b) => {
      const x = new Float32Array(new Uint32Array([b << 16]).buffer)[0]!;
      return new Uint16Array(new Float32Array([1 / (1 + Math.exp(-x))]).buffer)[1]!;
    }),
  );
  return { ins: [qkv, tensor('f32', [T, h.valueHeads], g), beta], attrs: { ...h, scale: Math.fround(h.keyDim ** -0.5), l2Eps: GDN_L2NORM_EPS } };
}

/** the op on `gpu`: its output and how many kernels it launched */
async function runGpu(gpu: GpuDevice, ins: Tensor[], attrs: Record<string, unknown>): Promise<Tensor & { launches: number }> {
  const handles = ins.map((t) => addon.upload(t.dtype, t.shape, t.data, gpu));
  try {
    const before = addon.counters(gpu).kernelLaunches;
    const [o] = await addon.run('gdnRecurrence', handles, attrs, 'exact', gpu);
    const launches = addon.counters(gpu).kernelLaunches - before;
    const data = new Uint16Array(addon.download(o!));
    addon.free(o!);
    return { ...tensor('bf16', [ins[0]!.shape[0]!, data.length / ins[0]!.shape[0]! || 0], data), launches };
  } finally {
    for (const h of handles) addon.free(h);
  }
}

interface Measured {
  /** max and mean |fast - reference| in bf16 ulps of the row's largest |reference| */
  maxRowUlp: number;
  meanRowUlp: number;
  exactFraction: number;
  differing: number;
  /** of the differing elements, where the fast kernel is the farther from float64 */
  fastFarther: number;
  refFarther: number;
  /** mean |x - float64| in bf16 ulps of the row's largest |float64|, the fast kernel's and the reference's */
  fastErr: number;
  refErr: number;
}

/** the fast kernel's output against the CPU reference's and the float64 evaluation's */
function measure(fast: Tensor, ref: Tensor, ins: Tensor[], attrs: Record<string, unknown>): Measured {
  const [exact] = exactKernel('gdnRecurrence')(ins.map(widenTensor), attrs);
  const d = diffTensors('o', { tensor: fast, rowStart: 0 }, { tensor: ref, rowStart: 0 }, { exact: { tensor: exact!, rowStart: 0 } });
  const [rows, cols] = ref.shape as [number, number];
  const f = new Float32Array(fast.data.length);
  const r = new Float32Array(ref.data.length);
  for (let i = 0; i < f.length; i++) {
    f[i] = new Float32Array(new Uint32Array([(fast.data as Uint16Array)[i]! << 16]).buffer)[0]!;
    r[i] = new Float32Array(new Uint32Array([(ref.data as Uint16Array)[i]! << 16]).buffer)[0]!;
  }
  const unit = (m: number) => (m === 0 ? 1 : 2 ** (Math.floor(Math.log2(m)) - 7));
  let sumRef = 0;
  let sumFastExact = 0;
  let sumRefExact = 0;
  for (let t = 0; t < rows; t++) {
    let m = 0;
    let me = 0;
    for (let c = 0; c < cols; c++) {
      m = Math.max(m, Math.abs(r[t * cols + c]!));
      me = Math.max(me, Math.abs(exact!.data[t * cols + c]!));
    }
    for (let c = 0; c < cols; c++) {
      const i = t * cols + c;
      sumRef += Math.abs(f[i]! - r[i]!) / unit(m);
      sumFastExact += Math.abs(f[i]! - exact!.data[i]!) / unit(me);
      sumRefExact += Math.abs(r[i]! - exact!.data[i]!) / unit(me);
    }
  }
  const n = rows * cols;
  return {
    maxRowUlp: d.rowUlp ?? 0,
    meanRowUlp: sumRef / n,
    exactFraction: d.exactFraction,
    differing: d.differing,
    fastFarther: d.exact!.fartherA,
    refFarther: d.exact!.fartherB,
    fastErr: sumFastExact / n,
    refErr: sumRefExact / n,
  };
}

const TOL = FAST_KERNEL_TOLERANCES.gdnRecurrence!.maxUlp;
const fmt = (m: Measured) =>
  `max ${m.maxRowUlp.toFixed(2)} mean ${m.meanRowUlp.toFixed(4)} row-scaled ulp, bit-exact ${(m.exactFraction * 100).toFixed(1)}%, ` +
  `${m.differing} differ: fast farther from float64 on ${m.fastFarther}, reference on ${m.refFarther}; mean error vs float64 fast ${m.fastErr.toFixed(4)} reference ${m.refErr.toFixed(4)}`;

describe('chunked gdnRecurrence (kernels fast) on the emulated device', () => {
  const fast = addon.openGpu('emulated', { kernels: 'fast' });
  const exactGpu = addon.openGpu('emulated', { kernels: 'exact' });
  const small: Heads = { keyHeads: 2, valueHeads: 4, keyDim: 16, valueDim: 24 };
  const wide: Heads = { keyHeads: 1, valueHeads: 3, keyDim: 128, valueDim: 128 };

  it('a tolerance is declared for it, in row-scaled bf16 ulps', () => {
    expect(TOL).toBeGreaterThan(0);
    expect(FAST_KERNEL_TOLERANCES.gdnRecurrence!.opClass).toBe('sequence');
  });

  for (const decay of ['none', 'mild', 'strong'] as const) {
    it(`T below, at and across chunk boundaries, GQA heads, ${decay} decay: within the tolerance of the reference, as near float64`, async () => {
      for (const T of [1, 5, 63, 64, 65, 200]) {
        const { ins, attrs } = inputs(T, small, decay, 100 + T);
        const ref = cpuKernel('gdnRecurrence')(ins, attrs)[0] as Tensor;
        const got = await runGpu(fast, ins, attrs);
        expect(got.shape).toEqual(ref.shape);
        // the l2 norms, the chunks' solve and the state pass (the exact kernel is two launches)
        expect(got.launches).toBe(3);
        const m = measure(got, ref, ins, attrs);
        const where = `T ${T}, ${decay}: ${fmt(m)}`;
        console.log(where);
        expect(m.maxRowUlp, where).toBeLessThanOrEqual(TOL);
        // the chunk form's distance to float64 is the reference's own, within 1%
        expect(m.fastErr, where).toBeLessThanOrEqual(1.01 * m.refErr + 1e-3);
      }
    }, 120_000);
  }

  it("at full head dims (128) over 1000 tokens its error against float64 does not grow with T faster than the reference's", async () => {
    const ratios: number[] = [];
    for (const T of [100, 1000]) {
      const { ins, attrs } = inputs(T, wide, 'mild', 7 + T);
      const ref = cpuKernel('gdnRecurrence')(ins, attrs)[0] as Tensor;
      const got = await runGpu(fast, ins, attrs);
      const m = measure(got, ref, ins, attrs);
      const where = `T ${T}, dk dv 128: ${fmt(m)}`;
      console.log(where);
      expect(m.maxRowUlp, where).toBeLessThanOrEqual(TOL);
      expect(m.fastErr, where).toBeLessThanOrEqual(1.01 * m.refErr + 1e-3);
      // where the two round to different bf16 values (a few in ten thousand), the fast one is the
      // farther from float64 on about a quarter of them (measured)
      expect(m.fastFarther, where).toBeLessThanOrEqual(m.refFarther);
      ratios.push(m.fastErr / m.refErr);
    }
    expect(ratios[1], `fast/reference error vs float64 at T 100 and 1000: ${ratios.join(', ')}`).toBeLessThanOrEqual(ratios[0]! + 0.01);
  }, 300_000);

  it('where it and the reference round apart, it is the farther from float64 on fewer than half of the elements, at 99% confidence (dk dv 128)', async () => {
    // T not a multiple of the chunk; the model's mild gates, strong ones and none (the state
    // carried over every chunk). Each element is a draw of which side rounds toward float64:
    // the pooled fraction plus 2.33 standard errors of a fair coin must stay under one half
    const cases: [number, Decay, number][] = [
      [1000, 'mild', 1],
      [1000, 'mild', 2],
      [1500, 'strong', 5],
      [1000, 'none', 7],
    ];
    let differing = 0;
    let farther = 0;
    for (const [T, decay, seed] of cases) {
      const { ins, attrs } = inputs(T, wide, decay, seed);
      const ref = cpuKernel('gdnRecurrence')(ins, attrs)[0] as Tensor;
      const m = measure(await runGpu(fast, ins, attrs), ref, ins, attrs);
      const where = `T ${T}, ${decay}, dk dv 128: ${fmt(m)}`;
      console.log(where);
      expect(m.fastFarther, where).toBeLessThan(m.differing / 2);
      differing += m.differing;
      farther += m.fastFarther;
    }
    const bound = farther / differing + 2.33 * Math.sqrt(0.25 / differing);
    expect(bound, `farther on ${farther} of ${differing}`).toBeLessThan(0.5);
  }, 300_000);

  it("kernels 'exact' still gives the reference's bits", async () => {
    for (const T of [5, 65]) {
      const { ins, attrs } = inputs(T, small, 'mild', 300 + T);
      const ref = cpuKernel('gdnRecurrence')(ins, attrs)[0] as Tensor;
      const got = await runGpu(exactGpu, ins, attrs);
      expect(got.launches).toBe(2);
      expect(Buffer.from(got.data.buffer).equals(Buffer.from(ref.data.buffer)), `T ${T}`).toBe(true);
    }
  });
});
