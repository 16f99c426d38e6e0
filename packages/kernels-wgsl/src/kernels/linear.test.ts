import { describe, expect, it } from 'vitest';
import { bf16ToF32, f32ToBf16, linearBf16, type Tensor } from '@hcsp/core';
import { runPlanOnGpu, useChromiumGpu } from '../../../../test/support/wgslKernelSuite.ts';
import { DEFAULT_LINEAR_TILING, DEFAULT_WORKGROUP_TILING, planLinear, tilingName, type LinearTiling, type WorkgroupTiling } from './linear.ts';

// The tiled linear kernels against core's linearBf16 (k ascending in fp32, one rounding),
// bit for bit, on Chromium's SwiftShader: shapes at and around every tile edge, and a row
// whose sum gives other bits in any order but the reference's.

const gpu = useChromiumGpu();

let seed = 777;
function rand(): number {
  seed ^= seed << 13;
  seed ^= seed >>> 17;
  seed ^= seed << 5;
  return (seed >>> 0) / 2 ** 32;
}

function bf16Tensor(shape: number[], value: (i: number) => number): Tensor {
  const n = shape[0] * shape[1];
  return { dtype: 'bf16', shape, data: Uint16Array.from({ length: n }, (_, i) => f32ToBf16(value(i))) };
}

const decoded = (t: Tensor) => Float32Array.from(t.data as Uint16Array, (b) => bf16ToF32(b));

/** Runs the plan of `tiling` on the GPU; expects y's bits equal to linearBf16's. */
async function expectLinearExact(tiling: LinearTiling | WorkgroupTiling, x: Tensor, w: Tensor): Promise<void> {
  const [T, K] = x.shape;
  const O = w.shape[0];
  const out = { shape: [T, O], dtype: 'bf16' };
  const plan = planLinear([x, w], tiling);
  const run = await runPlanOnGpu(gpu(), plan, [x, w], [out]);
  const want = linearBf16(decoded(x), decoded(w), T, K, O);
  const got = run.bits[0]!;
  let differing = 0;
  let first = '';
  for (let i = 0; i < want.length; i++) {
    if (got[i] !== want[i]) {
      if (differing++ === 0) first = `first y[${Math.floor(i / O)},${i % O}]: got 0x${got[i].toString(16)}, want 0x${want[i].toString(16)}`;
    }
  }
  expect(
    differing,
    `${tilingName(tiling)} [${T},${K}]x[${O},${K}]^T (${plan.dispatches.map((d) => d.key).join(', ')}): ${differing} of ${want.length} differ; ${first}`,
  ).toBe(0);
}

const random = (shape: number[]) => bf16Tensor(shape, () => (rand() * 2 - 1) * 2);

/** Sizes around a tile of n: 1, n - 1, n, n + 1 and an odd size past two tiles. */
const around = (n: number) => [...new Set([1, Math.max(1, n - 1), n, n + 1, 2 * n + 3])];

// A second workgroup tiling with several invocation rows (x reads with a runtime index)
const MULTI_ROW: WorkgroupTiling = { kind: 'workgroup', rows: 2, cols: 4, wgRows: 4, wgCols: 2, kTile: 8 };

describe('linear: the workgroup-tiled kernel keeps the reference k order on every shape', () => {
  for (const tl of [DEFAULT_WORKGROUP_TILING, MULTI_ROW]) {
    const bt = tl.rows * tl.wgRows;
    const bo = tl.cols * tl.wgCols;
    it(`${tilingName(tl)}: T and O at 1, tile - 1, tile, tile + 1 and odd; K around the k tile, odd and even`, async () => {
      for (const T of around(bt)) await expectLinearExact(tl, random([T, 2 * tl.kTile]), random([bo + 1, 2 * tl.kTile]));
      for (const O of around(bo)) await expectLinearExact(tl, random([bt + 1, tl.kTile + 1]), random([O, tl.kTile + 1]));
      for (const K of around(tl.kTile)) await expectLinearExact(tl, random([3, K]), random([5, K]));
      await expectLinearExact(tl, random([2 * bt + 1, 3 * tl.kTile + 4]), random([2 * bo + 2, 3 * tl.kTile + 4]));
    });
  }

  it('non-finite products and signed zeros: NaN, inf, -0 sums, as the reference', async () => {
    const T = 3;
    const K = 21;
    const O = 7;
    const special = [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, -0, 0];
    const x = bf16Tensor([T, K], (i) => (i % 11 === 3 ? special[i % special.length] : i % 5 === 0 ? -0 : (rand() * 2 - 1) * 2));
    // row o = 0 of w is all -0: x * -0 sums of -0 and +0 products
    const w = bf16Tensor([O, K], (i) => (i < K ? -0 : i % 13 === 4 ? special[(i >> 1) % special.length] : (rand() * 2 - 1) * 2));
    for (const tl of [DEFAULT_WORKGROUP_TILING, MULTI_ROW]) await expectLinearExact(tl, x, w);
    const xNeg = bf16Tensor([T, K], () => -1);
    await expectLinearExact(
      DEFAULT_WORKGROUP_TILING,
      xNeg,
      bf16Tensor([O, K], () => 0),
    ); // every product -0: the sum stays -0
  });

  it('a sum that any other order rounds differently (2^24, ones, then -2^24: in k order every one is lost)', async () => {
    // products: k = 0 is 2^24, k = 1..K-2 are 1 (each a tie against 2^24, rounded to even:
    // lost), k = K-1 is -2^24, so the reference gives exactly 0; summing the ones first, in
    // k tiles, split-k or a tree gives their count (nonzero). Row t shifts the big terms by t.
    const K = 70;
    const T = 4;
    const O = 6;
    const x = bf16Tensor([T, K], (i) => {
      const [t, k] = [Math.floor(i / K), i % K];
      return k === t ? 4096 : k === K - 1 ? -4096 : 1;
    });
    const w = bf16Tensor([O, K], (i) => (i % K === 0 || i % K === K - 1 ? 4096 : 1));
    const want = linearBf16(decoded(x), decoded(w), T, K, O);
    expect(Array.from(want.slice(0, O))).toEqual(Array(O).fill(0)); // row 0: 2^24 first, every one lost
    for (const tl of [DEFAULT_WORKGROUP_TILING, MULTI_ROW, DEFAULT_LINEAR_TILING]) await expectLinearExact(tl, x, w);
  });
});

describe('linear planner', () => {
  it('takes the register tiling where K and O fit it, the workgroup kernel elsewhere', () => {
    const keys = (T: number, K: number, O: number) =>
      planLinear([
        { shape: [T, K], dtype: 'bf16' },
        { shape: [O, K], dtype: 'bf16' },
      ]).dispatches.map((d) => d.key);
    expect(keys(5, 24, 6)).toEqual([`linear-tiled-${tilingName(DEFAULT_LINEAR_TILING)}`]);
    expect(keys(3, 7, 5)).toEqual([`linear-${tilingName(DEFAULT_WORKGROUP_TILING)}-elem-atomic`]);
    expect(keys(3, 8, 5)).toEqual([`linear-${tilingName(DEFAULT_WORKGROUP_TILING)}-word-atomic`]);
  });

  it('refuses a workgroup tiling that does not fit, naming the value', () => {
    const xw = [
      { shape: [2, 4], dtype: 'bf16' },
      { shape: [2, 4], dtype: 'bf16' },
    ];
    const plan = (tl: WorkgroupTiling) => planLinear(xw, tl);
    expect(() => plan({ ...DEFAULT_WORKGROUP_TILING, kTile: 6 })).toThrow('gemm tiling: kTile = 6 is not a multiple of 4 in [4, 256]');
    expect(() => plan({ ...DEFAULT_WORKGROUP_TILING, wgRows: 16, wgCols: 32 })).toThrow('wgRows x wgCols = 16 x 32 is not a workgroup of 1 to 256 invocations');
    expect(() => plan({ ...DEFAULT_WORKGROUP_TILING, kTile: 256 })).toThrow(/the tiles need 73728 bytes of workgroup memory, more than 16384/);
  });
});
