// The fast grouped MoE GEMMs (kernels 'fast': native/src/gpu/kernels/moe_grouped.cu, issue 24
// item 3) on the emulated GPU against the CPU reference and the float64 evaluation: routings
// with uneven expert loads (experts with no rows, one expert with most of them), T not a
// multiple of the 64-row tile and under one tile, H and inter not multiples of 8 (the scalar
// staging) or spanning several column and k tiles, tp 2 and 4 expert shards. Each within the
// tolerance moeExperts declares (fastKernelsPrecision.ts), the fast kernel nearer the float64
// value than the reference on most elements where they differ, its error against float64 not
// growing with T faster than the reference's; `kernels: 'exact'` the reference's bits. Over the
// fake hip and cuda runtimes: the fast launches by name.
import { bf16ToF32, cpuKernel, exactKernel, f32ToBf16, roundBf16, siluF32, type Tensor } from '@hcsp/core';
import { diffTensors } from '@hcsp/core/xcheck';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useFakeGpuRuntimes } from '../../../test/support/fakeGpuLibraries.ts';
import { mulberry32 } from '../../../test/support/mulberry32.ts';
import { FAST_KERNEL_TOLERANCES } from './fastKernelsPrecision.ts';
import { loadNativeAddon, type GpuDevice, type NativeTensor } from './nativeAddon.ts';

const addon = loadNativeAddon();
const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const POISON_CHILD = fileURLToPath(new URL('../../../test/support/groupedMoePoisonChild.ts', import.meta.url));

interface Routing {
  T: number;
  H: number;
  inter: number;
  topK: number;
  /** experts in the model (the ids' range) */
  experts: number;
  ids: number[];
}

/** seeded bf16 values of a normal distribution with deviation `std` (Box-Muller) */
function normalBf16(n: number, seed: number, std: number): Uint16Array {
  const r = mulberry32(seed);
  const f = new Float32Array(n);
  for (let i = 0; i < n; i++) f[i] = std * Math.sqrt(-2 * Math.log(1 - r())) * Math.cos(2 * Math.PI * r());
  return Uint16Array.from(new Uint32Array(f.buffer), (u) => (u + 0x7fff + ((u >>> 16) & 1)) >>> 16);
}

/** routing weights: positive, summing to about 1 per token */
function weightsBf16(n: number, topK: number, seed: number): Uint16Array {
  const r = mulberry32(seed);
  const f = new Float32Array(n).map(() => (0.5 + r()) / topK);
  return Uint16Array.from(new Uint32Array(f.buffer), (u) => u >>> 16);
}

/**
 * ids of T tokens over `experts`, topK distinct each: a token's first choice is expert `hot`
 * with probability `hotShare`, the others uniform over experts not in `cold` (never chosen)
 */
function skewedIds(T: number, topK: number, experts: number, seed: number, hot: number, hotShare: number, cold: readonly number[]): number[] {
  const r = mulberry32(seed);
  const ids: number[] = [];
  for (let t = 0; t < T; t++) {
    const mine: number[] = r() < hotShare ? [hot] : [];
    while (mine.length < topK) {
      const e = Math.floor(r() * experts);
      if (!mine.includes(e) && !cold.includes(e)) mine.push(e);
    }
    ids.push(...mine);
  }
  return ids;
}

/** rank `rank` of `tp`'s moeExperts inputs and attributes: its contiguous block of experts */
function rankInputs(c: Routing, rank: number, tp: number, seed: number): { inputs: Tensor[]; attrs: Record<string, unknown> } {
  const numLocal = c.experts / tp;
  const gateUpAll = normalBf16(c.experts * 2 * c.inter * c.H, seed + 2, 1 / Math.sqrt(c.H));
  const downAll = normalBf16(c.experts * c.H * c.inter, seed + 3, 1 / Math.sqrt(c.inter));
  const first = rank * numLocal;
  const inputs: Tensor[] = [
    { dtype: 'bf16', shape: [c.T, c.H], data: normalBf16(c.T * c.H, seed, 1) },
    { dtype: 'i32', shape: [c.T, c.topK], data: Int32Array.from(c.ids) },
    { dtype: 'bf16', shape: [c.T, c.topK], data: weightsBf16(c.T * c.topK, c.topK, seed + 1) },
    { dtype: 'bf16', shape: [numLocal * 2 * c.inter, c.H], data: gateUpAll.slice(first * 2 * c.inter * c.H, (first + numLocal) * 2 * c.inter * c.H) },
    { dtype: 'bf16', shape: [numLocal * c.H, c.inter], data: downAll.slice(first * c.H * c.inter, (first + numLocal) * c.H * c.inter) },
  ];
  return { inputs, attrs: { firstExpert: first, numLocal, intermediate: c.inter } };
}

async function runOn(gpu: GpuDevice, inputs: Tensor[], attrs: Record<string, unknown>): Promise<Float32Array> {
  const held = inputs.map((t) => addon.upload(t.dtype, t.shape, t.data, gpu));
  try {
    const [routed] = (await addon.run('moeExperts', held, attrs, 'exact', gpu)) as NativeTensor[];
    held.push(routed!);
    return new Float32Array(addon.download(routed!));
  } finally {
    for (const t of held) addon.free(t);
  }
}

interface Measure {
  /** elements compared, elements whose bits differ */
  count: number;
  differing: number;
  /** max and mean |fast - reference| in bf16 ulps of the row's largest |reference| (the mean over all elements) */
  maxRowUlp: number;
  meanRowUlp: number;
  /** of the differing elements: those where the fast kernel (the reference) is the farther from float64 */
  fastFarther: number;
  refFarther: number;
  /** of the differing elements: those where the fast kernel (the reference) is the farther from correctlyRoundedGemms' */
  fastFartherRounded: number;
  refFartherRounded: number;
  /** max |x - float64| in bf16 ulps of the row's largest |float64|, each side */
  fastExactUlp: number;
  refExactUlp: number;
}

const bf16UlpAt = (m: number): number => (m === 0 ? 0 : 2 ** (Math.floor(Math.log2(Math.abs(m))) - 7));

/** the fast kernel's routed sum against the CPU reference's and the float64 evaluation's */
async function measure(gpu: GpuDevice, inputs: Tensor[], attrs: Record<string, unknown>): Promise<Measure> {
  const fast = await runOn(gpu, inputs, attrs);
  const [ref] = cpuKernel('moeExperts')(inputs, attrs) as Tensor[];
  const exactIn = inputs.map((t) => ({
    dtype: t.dtype,
    shape: t.shape,
    data:
      t.dtype === 'bf16' ? Float64Array.from(t.data as Uint16Array, (u) => new Float32Array(new Uint32Array([u << 16]).buffer)[0]!) : (t.data as Int32Array),
  }));
  const [exact] = exactKernel('moeExperts')(exactIn, attrs);
  const [T, H] = ref!.shape as [number, number];
  const d = diffTensors(
    'routed',
    { tensor: { dtype: 'f32', shape: [T, H], data: fast }, rowStart: 0 },
    { tensor: ref!, rowStart: 0 },
    { exact: { tensor: exact!, rowStart: 0 } },
  );
  const want = ref!.data as Float32Array;
  const rounded = correctlyRoundedGemms(inputs, attrs);
  let fastFartherRounded = 0;
  let refFartherRounded = 0;
  for (let i = 0; i < T * H; i++) {
    const ef = Math.abs(fast[i]! - rounded[i]!);
    const er = Math.abs(want[i]! - rounded[i]!);
    if (ef > er) fastFartherRounded++;
    if (er > ef) refFartherRounded++;
  }
  let sum = 0;
  for (let t = 0; t < T; t++) {
    let m = 0;
    for (let j = 0; j < H; j++) m = Math.max(m, Math.abs(want[t * H + j]!));
    const unit = bf16UlpAt(m);
    for (let j = 0; j < H; j++) if (fast[t * H + j] !== want[t * H + j]) sum += Math.abs(fast[t * H + j]! - want[t * H + j]!) / unit;
  }
  return {
    count: d.count,
    differing: d.differing,
    maxRowUlp: d.rowUlp ?? 0,
    meanRowUlp: sum / d.count,
    fastFarther: d.exact!.fartherA,
    refFarther: d.exact!.fartherB,
    fastFartherRounded,
    refFartherRounded,
    fastExactUlp: d.exact!.a.maxUlp,
    refExactUlp: d.exact!.b.maxUlp,
  };
}

/**
 * moeExperts with the reference's every rounding but GEMMs rounded once from the float64 dot
 * product (a correctly rounded GEMM): where the fast kernel and the reference differ, it is an
 * intermediate's bf16 rounding that flipped (g, u, h or o), and this says which of the two
 * fp32 sums rounded it right. (The float64 evaluation has no intermediate roundings, so there
 * a flip is about as often right as wrong.)
 */
function correctlyRoundedGemms(inputs: Tensor[], attrs: Record<string, unknown>): Float32Array {
  const [x, ids, w, gateUp, down] = inputs.map((t) => t.data) as [Uint16Array, Int32Array, Uint16Array, Uint16Array, Uint16Array];
  const [T, H] = inputs[0]!.shape as [number, number];
  const topK = inputs[1]!.shape[1]!;
  const first = attrs.firstExpert as number;
  const numLocal = attrs.numLocal as number;
  const I = attrs.intermediate as number;
  const dot = (a: Uint16Array, ai: number, b: Uint16Array, bi: number, n: number): number => {
    let s = 0;
    for (let k = 0; k < n; k++) s += bf16ToF32(a[ai + k]!) * bf16ToF32(b[bi + k]!);
    return roundBf16(s);
  };
  const acc = new Float32Array(T * H);
  const h = new Uint16Array(I);
  for (let local = 0; local < numLocal; local++) {
    for (let t = 0; t < T; t++) {
      for (let k = 0; k < topK; k++) {
        if (ids[t * topK + k]! - first !== local) continue;
        for (let i = 0; i < I; i++) {
          const act = roundBf16(siluF32(dot(x, t * H, gateUp, (local * 2 * I + i) * H, H)));
          h[i] = f32ToBf16(Math.fround(act * dot(x, t * H, gateUp, (local * 2 * I + I + i) * H, H)));
        }
        const wk = bf16ToF32(w[t * topK + k]!);
        for (let j = 0; j < H; j++) {
          const o = dot(h, 0, down, (local * H + j) * I, I);
          acc[t * H + j] = Math.fround(acc[t * H + j]! + roundBf16(Math.fround(o * wk)));
        }
      }
    }
  }
  return acc;
}

const DECLARED = FAST_KERNEL_TOLERANCES.moeExperts!.maxUlp;

const ROUTINGS: (Routing & { name: string; tps: number[] })[] = [
  // 16 experts, topK 4: expert 3 in most tokens' choices, experts 5, 9 and 14 never chosen
  {
    name: 'uneven loads, T 300 (not a multiple of 64), H 256, inter 96',
    T: 300,
    H: 256,
    inter: 96,
    topK: 4,
    experts: 16,
    ids: skewedIds(300, 4, 16, 11, 3, 0.9, [5, 9, 14]),
    tps: [2, 4],
  },
  {
    name: 'T 5 (under one tile), H 200 and inter 40 (scalar staging, partial column and k tiles)',
    T: 5,
    H: 200,
    inter: 40,
    topK: 3,
    experts: 8,
    ids: skewedIds(5, 3, 8, 12, 0, 0.8, [6]),
    tps: [1, 2],
  },
  {
    name: 'T 130, one expert holding 2 full tiles and a partial one, H 136, inter 72',
    T: 130,
    H: 136,
    inter: 72,
    topK: 2,
    experts: 8,
    ids: skewedIds(130, 2, 8, 13, 7, 1, [2, 3]),
    tps: [1, 4],
  },
];

describe('moeExperts fast grouped GEMMs on the emulated GPU', () => {
  let fast: GpuDevice;
  let exact: GpuDevice;
  beforeAll(() => {
    fast = addon.openGpu('emulated', { kernels: 'fast' });
    exact = addon.openGpu('emulated', { kernels: 'exact' });
  });
  // the float64 attribution over every rank of every case: the differing elements are few per
  // case (a reassociated fp32 sum changes a bf16 intermediate's rounding now and then)
  const tally = { differing: 0, fastFarther: 0, refFarther: 0, fastFartherRounded: 0, refFartherRounded: 0 };
  afterAll(() => {
    console.log(`moeExperts fast vs reference, the tp cases: ${JSON.stringify(tally)}`);
  });

  for (const c of ROUTINGS) {
    for (const tp of c.tps) {
      it(`${c.name}, tp ${tp}: every rank within ${DECLARED} row-scaled ulps of the reference, no farther from float64 than the reference's error plus that`, async () => {
        for (let rank = 0; rank < tp; rank++) {
          const { inputs, attrs } = rankInputs(c, rank, tp, 100 + rank);
          const m = await measure(fast, inputs, attrs);
          expect(m.maxRowUlp, `rank ${rank}`).toBeLessThanOrEqual(DECLARED);
          expect(m.fastExactUlp, `rank ${rank}`).toBeLessThanOrEqual(m.refExactUlp + DECLARED);
          tally.differing += m.differing;
          tally.fastFarther += m.fastFarther;
          tally.refFarther += m.refFarther;
          tally.fastFartherRounded += m.fastFartherRounded;
          tally.refFartherRounded += m.refFartherRounded;
          console.log(`${c.name} tp ${tp} rank ${rank} ${JSON.stringify(m)}`);
        }
      }, 120_000);
    }
  }

  it('H 1024 (32 k tiles per sum): on most differing elements the fast kernel rounded the flipped intermediate right', async () => {
    const c: Routing = { T: 96, H: 1024, inter: 64, topK: 2, experts: 4, ids: skewedIds(96, 2, 4, 21, 1, 0.7, []) };
    const { inputs, attrs } = rankInputs(c, 0, 1, 300);
    const m = await measure(fast, inputs, attrs);
    console.log('H 1024', JSON.stringify(m));
    expect(m.differing).toBeGreaterThan(0);
    expect(m.maxRowUlp).toBeLessThanOrEqual(DECLARED);
    expect(m.fastExactUlp).toBeLessThanOrEqual(m.refExactUlp + DECLARED);
    // the fp32 sum reassociated over 32-term tiles is the nearer the exact dot product, so its
    // bf16 rounding is the correct one on most flips (measured 555 against 129)
    expect(m.fastFartherRounded * 2).toBeLessThan(m.differing);
    expect(m.fastFartherRounded).toBeLessThan(m.refFartherRounded);
  }, 120_000);

  it("the error against float64 does not grow with T: at T 64 and 512 (one routing), within the reference's own plus the tolerance", async () => {
    const ratios: number[] = [];
    for (const T of [64, 512]) {
      const c: Routing = { T, H: 256, inter: 64, topK: 4, experts: 8, ids: skewedIds(T, 4, 8, 31, 2, 0.5, [6]) };
      const { inputs, attrs } = rankInputs(c, 0, 2, 400);
      const m = await measure(fast, inputs, attrs);
      expect(m.maxRowUlp, `T ${T}`).toBeLessThanOrEqual(DECLARED);
      expect(m.fastExactUlp, `T ${T}`).toBeLessThanOrEqual(m.refExactUlp + DECLARED);
      ratios.push(m.fastExactUlp / m.refExactUlp);
    }
    // 8x the rows: the fast kernel's worst error relative to the reference's does not grow by more than the tolerance's share
    expect(ratios[1]!).toBeLessThanOrEqual(ratios[0]! * 1.5);
  }, 120_000);

  it("kernels 'exact' gives the reference's bits where the fast kernels do not", async () => {
    const c = ROUTINGS[0]!;
    const { inputs, attrs } = rankInputs(c, 1, 2, 101);
    const [ref] = cpuKernel('moeExperts')(inputs, attrs) as Tensor[];
    const want = Buffer.from((ref!.data as Float32Array).buffer);
    expect(Buffer.from((await runOn(exact, inputs, attrs)).buffer).equals(want)).toBe(true);
    expect(Buffer.from((await runOn(fast, inputs, attrs)).buffer).equals(want)).toBe(false);
  }, 120_000);

  it('a rank owning no routed rows and a rank with no experts: zeros, as the reference', async () => {
    const c: Routing = { T: 7, H: 16, inter: 8, topK: 2, experts: 8, ids: skewedIds(7, 2, 8, 41, 0, 0, [4, 5, 6, 7]) };
    const { inputs, attrs } = rankInputs(c, 1, 2, 500);
    // a freed block of the routed sum's size holding NaNs: the pool may hand it to the output
    addon.free(addon.upload('f32', [c.T, c.H], new Uint32Array(c.T * c.H).fill(0x7fc00000), fast));
    expect(Array.from(await runOn(fast, inputs, attrs))).toEqual(new Array(c.T * c.H).fill(0));
    const none = { ...attrs, numLocal: 0 };
    const empty = [
      inputs[0]!,
      inputs[1]!,
      inputs[2]!,
      { ...inputs[3]!, shape: [0, c.H], data: new Uint16Array(0) },
      { ...inputs[4]!, shape: [0, c.inter], data: new Uint16Array(0) },
    ];
    expect(Array.from(await runOn(fast, empty, none))).toEqual(new Array(c.T * c.H).fill(0));
  });
});

describe('moeExperts fast kernels under HCSP_POISON_UNINITIALIZED', () => {
  it('the same bits with every new scratch tensor filled with 0xFF: no kernel reads what it did not write', () => {
    const run = (poison: boolean): string => {
      const r = spawnSync(process.execPath, ['--import', 'tsx', POISON_CHILD], {
        cwd: ROOT,
        encoding: 'utf8',
        env: { ...process.env, HCSP_POISON_UNINITIALIZED: poison ? '1' : '0' },
        timeout: 60_000,
      });
      expect(r.status, r.stderr).toBe(0);
      return r.stdout.trim();
    };
    const clean = run(false);
    expect(clean).toMatch(/^[0-9a-f]{64} 0$/);
    expect(run(true)).toBe(clean);
  }, 130_000);
});

describe('moeExperts fast kernels over the fake hip and cuda runtimes', () => {
  const fake = useFakeGpuRuntimes('hcsp-gpugroupedmoe-', ['HCSP_HIP_LIB', 'HCSP_CUDA_LIB', 'FAKE_GPU_LOG']);

  const MOE_KERNELS = ['hcsp_moe_layout', 'hcsp_moe_token_rows', 'hcsp_moe_routed_sum'];
  const GROUPED_KERNELS = [
    'hcsp_moe_grouped_tiles',
    'hcsp_moe_grouped_gate_up',
    'hcsp_moe_grouped_gate_up_v8',
    'hcsp_moe_grouped_down',
    'hcsp_moe_grouped_down_v8',
  ];

  for (const [kind, arch, ext, runtime] of [
    ['hip', 'gfx942', 'hsaco', 'fakehip.so'],
    ['cuda', 'sm_90', 'cubin', 'fakecuda.so'],
  ] as const) {
    it(`${kind}: the tile table, one grouped launch per projection sized for the most tiles, the routed sum`, async () => {
      process.env[kind === 'hip' ? 'HCSP_HIP_LIB' : 'HCSP_CUDA_LIB'] = fake.lib(runtime);
      process.env.FAKE_GPU_LOG = fake.log();
      const folder = fake.codeObjects(`${kind}-grouped-moe`, arch, { [`moe.${ext}`]: MOE_KERNELS, [`moe_grouped.${ext}`]: GROUPED_KERNELS });
      const gpu = addon.openGpu(kind, { codeObjects: folder, kernels: 'fast' });
      // T 300, topK 4, 8 local experts: at most 1200 / 64 + 8 = 26 tiles; inter 96: 2 column
      // tiles of h; H 256: 2 column tiles of o
      const c = ROUTINGS[0]!;
      const { inputs, attrs } = rankInputs(c, 0, 2, 7);
      const held = inputs.map((t) => addon.upload(t.dtype, t.shape, t.data, gpu));
      try {
        await addon.sync(gpu);
        const logBefore = fake.logText().length;
        const [routed] = (await addon.run('moeExperts', held, attrs, 'vendor', gpu)) as NativeTensor[];
        held.push(routed!);
        const launched = [
          ...fake
            .logText()
            .slice(logBefore)
            .matchAll(/^launch (\w+) (grid=\S+ block=\S+)/gm),
        ].map((m) => `${m[1]} ${m[2]}`);
        expect(launched.map((l) => l.split(' ')[0])).toEqual([
          'hcsp_moe_layout',
          'hcsp_moe_token_rows',
          'hcsp_moe_grouped_tiles',
          'hcsp_moe_grouped_gate_up_v8',
          'hcsp_moe_grouped_down_v8',
          'hcsp_moe_routed_sum',
        ]);
        expect(launched[3]).toBe('hcsp_moe_grouped_gate_up_v8 grid=52,1,1 block=256,1,1');
        expect(launched[4]).toBe('hcsp_moe_grouped_down_v8 grid=52,1,1 block=256,1,1');
      } finally {
        for (const t of held) addon.free(t);
      }
    });
  }
});
