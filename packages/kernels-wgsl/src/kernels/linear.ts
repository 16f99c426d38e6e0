// linear: y[t,o] = bf(sum_k x[t,k] * w[o,k]), w [O,K]. Every output accumulates in fp32 in
// k order 0..K-1 with one rounding at the end, exactly as the CPU reference; bf16 x bf16
// products are exact in fp32, so fused or separate multiply-add give the same bits.
// Tiled path (K a multiple of the k step, O even): each invocation owns a rows x cols
// register tile and walks k a load unit at a time with no shared memory and no barriers.
// Other shapes take a one-word-per-invocation path.
//
// Why this default (r8c8, u32 loads, let-chains, workgroup 8, cols fastest): SwiftShader runs
// a workgroup's invocations as 4-wide SIMD lanes, and every storage load with a runtime
// index is a masked per-lane gather, one per scalar component (a vec4 load is 4 gathers), so
// the cost is gathers per FMA and registers: an RxC tile does R*C FMAs per R+C gathers.
// vec4 loads with big tiles keep 4(R+C) words live and spill; u32 loads keep R+C. Stores to
// a WGSL var become masked blends, so an iteration chains its FMAs through lets and stores
// each accumulator once. Measured with scripts/benchLinearVariants.ts on headless Chromium
// SwiftShader, 2 shared cores (other sessions running: load = 1-min load average), variants
// interleaved per round; GFLOP/s of [T,10240]x[10240,324]^T / [T,320]x[320,10240]^T:
//   T=1024, median of 3 (best), load 3.5-6:
//     r4c4w4cols-vec4u1 (old default)  3.21 (3.45) / 2.11 (3.43)
//     r8c8w4cols-u32u1ch               3.72 (4.27) / 3.20 (3.38)
//     r8c12w4cols-u32u1ch              4.08 (4.41) / 2.89 (3.35)
//     r8c8w8cols-u32u1ch (default)     4.63 (4.80) / 2.92 (4.88)
//   T=128, best of 5, load 5-9 (median ratios to the old default in brackets):
//     r4c4w4cols-vec4u1 3.81 / 3.38; r4c4 vec4 chained 1.11 [x0.67] / 1.28 [x1.16] at load 11;
//     r8c8 u32u1ch 5.26 [x1.38] / 4.65 [x1.61]; r8c8 u32u2ch 3.34 [x0.88] / 2.94 [x1.27];
//     r12c8 3.66 [x0.96] / 3.67 [x1.28]; r16c8 3.11 [x0.97] / 3.29 [x1.14]; r8c16 3.02 [x0.97] /
//     3.31 [x1.20]; r8c8 w16 4.10 [x1.12] / 2.99 [x1.32]; r8c8 rows-fastest 4.38 [x1.09] / 4.04
//     [x1.19]; r4c8 u32u2ch [x1.57] / [x1.13]; r2c8 [x0.99] / [x0.87]; r8c4 vec4 [x0.68] / [x1.22]
//   T=256, load 8-11: r8c8 u32u1ch w4 / w8 / w32 / w64 within noise of each other (x0.95-1.2).
// The machine was never idle, so single numbers swing up to 2x between rounds; the ranking
// above held across rounds. The GEMMs stay ~40x under OpenBLAS on the same cores.
import type { KernelBinding, KernelDispatch, KernelPlan, KernelPlanner, TensorInfo } from '../kernelProgram.ts';
import { BF16_WGSL } from '../wgsl/bf16.wgsl.ts';
import { buf, type BufferDecl, preamble } from '../wgsl/bindings.wgsl.ts';
import { flatDispatch, flatMain, numelOf, readInput, requireTyped, writeOutput } from './planParts.ts';

export interface LinearTiling {
  kind?: 'register';
  /** rows of x per invocation */
  rows: number;
  /** outputs per invocation (even: outputs are written as whole packed words) */
  cols: number;
  /** invocations per workgroup */
  wgSize: number;
  /** which tile index varies fastest across neighbouring invocations */
  fast: 'cols' | 'rows';
  /** load unit: one u32 (2 bf16) or one vec4<u32> (8 bf16) per row */
  load: 'u32' | 'vec4';
  /** load units per row per loop iteration (the loop body is unrolled by hand) */
  unroll: number;
  /**
   * accumulate in let-chains inside an iteration and store each accumulator var once per
   * iteration (SwiftShader lowers every store to a function var as a masked blend)
   */
  chain: boolean;
}

export const DEFAULT_LINEAR_TILING: LinearTiling = { rows: 8, cols: 8, wgSize: 8, fast: 'cols', load: 'u32', unroll: 1, chain: true };

function checkTiling(tl: LinearTiling): void {
  const int = (v: number, min: number, max: number) => Number.isInteger(v) && v >= min && v <= max;
  if (!int(tl.rows, 1, 32)) throw new Error(`linear tiling: rows = ${tl.rows} is not an integer in [1, 32]`);
  if (!int(tl.cols, 2, 32) || tl.cols % 2 !== 0) throw new Error(`linear tiling: cols = ${tl.cols} is not an even integer in [2, 32]`);
  if (!int(tl.wgSize, 1, 256)) throw new Error(`linear tiling: wgSize = ${tl.wgSize} is not an integer in [1, 256]`);
  if (!int(tl.unroll, 1, 16)) throw new Error(`linear tiling: unroll = ${tl.unroll} is not an integer in [1, 16]`);
  if (tl.load !== 'u32' && tl.load !== 'vec4') throw new Error(`linear tiling: load = '${String(tl.load)}' is not 'u32' or 'vec4'`);
  if (tl.fast !== 'cols' && tl.fast !== 'rows') throw new Error(`linear tiling: fast = '${String(tl.fast)}' is not 'cols' or 'rows'`);
}

/** k elements one loop iteration of the tiled kernel consumes per row. */
export function tilingKStep(tl: LinearTiling): number {
  return 2 * tl.unroll * (tl.load === 'vec4' ? 4 : 1);
}

/** x and w read in load units of `unit`, y written as packed bf16 words. */
function linearBuffers(unit: BufferDecl['type']): BufferDecl[] {
  return [buf('x', readInput(0), unit), buf('w', readInput(1), unit), buf('y', writeOutput(0))];
}

function tiledKernel(tl: LinearTiling): { wgsl: string; bindings: KernelBinding[] } {
  const { rows: R, cols: C } = tl;
  const unitWords = tl.load === 'vec4' ? 4 : 1;
  const pre = preamble(['T', 'K', 'O', 'tilesO', 'tilesT', 'groupsX'], linearBuffers(tl.load === 'vec4' ? 'vec4<u32>' : 'u32'));
  const lines: string[] = [];
  const decl: string[] = [];
  for (let r = 0; r < R; r++) decl.push(`let xb${r} = min(t0 + ${r}u, u.T - 1u) * kv;`);
  for (let c = 0; c < C; c++) decl.push(`let wb${c} = min(o0 + ${c}u, u.O - 1u) * kv;`);
  for (let r = 0; r < R; r++) for (let c = 0; c < C; c++) decl.push(`var a${r}_${c}: f32 = 0.0;`);
  // k order within an iteration: unit 0..unroll-1, word component x,y,z,w, low half then high
  const cur: string[][] = [];
  for (let r = 0; r < R; r++) cur.push(Array.from({ length: C }, (_, c) => `a${r}_${c}`));
  let step = 0;
  const comps = tl.load === 'vec4' ? ['.x', '.y', '.z', '.w'] : [''];
  for (let q = 0; q < tl.unroll; q++) {
    for (let r = 0; r < R; r++) lines.push(`let xv${r}_${q} = x[xb${r} + j + ${q}u];`);
    for (let c = 0; c < C; c++) lines.push(`let wv${c}_${q} = w[wb${c} + j + ${q}u];`);
    for (const comp of comps) {
      for (const half of ['lo', 'hi']) {
        const unpack = (v: string) => (half === 'lo' ? `bitcast<f32>(${v}${comp} << 16u)` : `bitcast<f32>(${v}${comp} & 0xffff0000u)`);
        const tag = `${q}${comp.slice(1)}${half}`;
        for (let r = 0; r < R; r++) lines.push(`let xs${r}_${tag} = ${unpack(`xv${r}_${q}`)};`);
        for (let c = 0; c < C; c++) lines.push(`let ws${c}_${tag} = ${unpack(`wv${c}_${q}`)};`);
        for (let r = 0; r < R; r++)
          for (let c = 0; c < C; c++) {
            if (tl.chain) {
              const next = `s${r}_${c}_${step}`;
              lines.push(`let ${next} = ${cur[r][c]} + xs${r}_${tag} * ws${c}_${tag};`);
              cur[r][c] = next;
            } else {
              lines.push(`a${r}_${c} = a${r}_${c} + xs${r}_${tag} * ws${c}_${tag};`);
            }
          }
        step++;
      }
    }
  }
  if (tl.chain) for (let r = 0; r < R; r++) for (let c = 0; c < C; c++) lines.push(`a${r}_${c} = ${cur[r][c]};`);
  const store: string[] = [];
  for (let r = 0; r < R; r++) {
    store.push(`if (t0 + ${r}u < u.T) {`);
    for (let c = 0; c < C; c += 2) {
      store.push(`  if (o0 + ${c}u < u.O) { y[((t0 + ${r}u) * u.O + o0 + ${c}u) >> 1u] = pack_bf16(a${r}_${c}, a${r}_${c + 1}); }`);
    }
    store.push('}');
  }
  const tileOf =
    tl.fast === 'cols'
      ? 'let o0 = (inv % u.tilesO) * ' + C + 'u;\n  let t0 = (inv / u.tilesO) * ' + R + 'u;'
      : 'let t0 = (inv % u.tilesT) * ' + R + 'u;\n  let o0 = (inv / u.tilesT) * ' + C + 'u;';
  const wgsl = `${BF16_WGSL}
${pre.wgsl}
${flatMain(
  tl.wgSize,
  'u.tilesO * u.tilesT',
  `${tileOf}
  let kv = u.K / ${2 * unitWords}u;
  ${decl.join('\n  ')}
  for (var j = 0u; j < kv; j = j + ${tl.unroll}u) {
    ${lines.join('\n    ')}
  }
  ${store.join('\n  ')}`,
)}`;
  return { wgsl, bindings: pre.bindings };
}

export interface WorkgroupTiling {
  kind: 'workgroup';
  /** rows of x per invocation (strided by wgRows inside the workgroup's tile) */
  rows: number;
  /** outputs per invocation, as cols / 2 adjacent pairs (strided by 2 wgCols) */
  cols: number;
  /** invocations along the tile's rows */
  wgRows: number;
  /** invocations along the tile's outputs */
  wgCols: number;
  /** k elements of x and w staged in workgroup memory per step (even) */
  kTile: number;
}

export const DEFAULT_WORKGROUP_TILING: WorkgroupTiling = { kind: 'workgroup', rows: 8, cols: 8, wgRows: 1, wgCols: 8, kTile: 16 };

/** WebGPU's guaranteed maxComputeWorkgroupStorageSize. */
const WORKGROUP_BYTES = 16384;

function checkWorkgroupTiling(tl: WorkgroupTiling): void {
  const int = (v: number, min: number, max: number) => Number.isInteger(v) && v >= min && v <= max;
  if (!int(tl.rows, 1, 32)) throw new Error(`linear tiling: rows = ${tl.rows} is not an integer in [1, 32]`);
  if (!int(tl.cols, 2, 32) || tl.cols % 2 !== 0) throw new Error(`linear tiling: cols = ${tl.cols} is not an even integer in [2, 32]`);
  if (!int(tl.wgRows, 1, 256) || !int(tl.wgCols, 1, 256) || tl.wgRows * tl.wgCols > 256) {
    throw new Error(`linear tiling: wgRows x wgCols = ${tl.wgRows} x ${tl.wgCols} is not a workgroup of 1 to 256 invocations`);
  }
  if (!int(tl.kTile, 2, 256) || tl.kTile % 2 !== 0) throw new Error(`linear tiling: kTile = ${tl.kTile} is not an even integer in [2, 256]`);
  const bytes = 4 * tl.kTile * (tl.rows * tl.wgRows + tl.cols * tl.wgCols);
  if (bytes > WORKGROUP_BYTES) throw new Error(`linear tiling: the tiles need ${bytes} bytes of workgroup memory, more than ${WORKGROUP_BYTES}`);
}

// Workgroup-tiled path, any shape: a workgroup owns a BT x BO tile of y (BT = rows * wgRows,
// BO = cols * wgCols) and walks k in steps of kTile. Each step stages x[t0.., k0..] and
// w[o0.., k0..] in workgroup memory, k-major, as fp32 bits (bf16 << 16), then every
// invocation adds kTile products into each of its rows x cols accumulators, k ascending, so
// every output's sum is the reference's: k = 0..K-1, one fp32 add at a time. Terms past K
// are staged as x = +0, w = -0: their product -0 leaves any sum unchanged (acc + -0 == acc
// for every acc, -0 and NaN included), so edge tiles add nothing; rows and outputs past T
// and O are computed from clamped loads and never stored.
// Invocation (tr, tc) owns rows t0 + tr + r * wgRows and output pairs o0 + 2 (tc + p * wgCols)
// + {0, 1}: neighbouring invocations read neighbouring workgroup words (no bank conflicts on
// a GPU), and with one invocation row (wgRows = 1) every x read has a constant index, which
// SwiftShader turns into one scalar load and a broadcast instead of a per-lane gather.
// A pair is one whole y word when O is even; with O odd a word can straddle two tiles, so
// each half is written by atomicAnd/atomicOr on its own 16 bits (disjoint bits: the two
// writers commute).
function workgroupKernel(tl: WorkgroupTiling, evenK: boolean, evenO: boolean): { wgsl: string; bindings: KernelBinding[] } {
  const { rows: R, cols: C, wgRows: WT, wgCols: WO, kTile: KT } = tl;
  const BT = R * WT;
  const BO = C * WO;
  const WG = WT * WO;
  const pre = preamble(['T', 'K', 'O', 'tilesO', 'tiles', 'groupsX'], [buf('x', readInput(0)), buf('w', readInput(1)), buf('y', writeOutput(0), evenO ? 'u32' : 'atomic<u32>')]);
  // staging: e-th unit of a tile (a word of two k, or one element when K is odd) -> (row, kk)
  const stage = (src: string, dst: string, tileRows: number, first: string, limit: string, pad: string): string[] => {
    const per = evenK ? KT / 2 : KT;
    const units = tileRows * per;
    const out: string[] = [];
    for (let i = 0; i < Math.ceil(units / WG); i++) {
      const body: string[] = [];
      body.push(`let e = lid + ${i * WG}u;`);
      body.push(`let row = e / ${per}u;`);
      body.push(`let j = e % ${per}u;`);
      body.push(`let rr = min(${first} + row, ${limit} - 1u);`);
      if (evenK) {
        body.push(`let k = k0 + 2u * j;`);
        body.push(`let v = ${src}[select(0u, (rr * u.K + k) / 2u, k < u.K)];`);
        body.push(`${dst}[2u * j * ${tileRows}u + row] = select(${pad}, v << 16u, k < u.K);`);
        body.push(`${dst}[(2u * j + 1u) * ${tileRows}u + row] = select(${pad}, v & 0xffff0000u, k < u.K);`);
      } else {
        body.push(`let k = k0 + j;`);
        body.push(`let i = select(0u, rr * u.K + k, k < u.K);`);
        body.push(`let v = (${src}[i >> 1u] >> ((i & 1u) * 16u)) << 16u;`);
        body.push(`${dst}[j * ${tileRows}u + row] = select(${pad}, v, k < u.K);`);
      }
      out.push(units % WG !== 0 && (i + 1) * WG > units ? `if (lid + ${i * WG}u < ${units}u) {\n      ${body.join('\n      ')}\n    }` : `{\n      ${body.join('\n      ')}\n    }`);
    }
    return out;
  };
  const cur: string[][] = [];
  for (let r = 0; r < R; r++) cur.push(Array.from({ length: C }, (_, c) => `a${r}_${c}`));
  const mul: string[] = [];
  const xRow = (r: number) => (WT === 1 ? `${r}u` : `tr + ${r * WT}u`);
  const wCol = (c: number) => `wc + ${2 * (c >> 1) * WO + (c & 1)}u`;
  for (let kk = 0; kk < KT; kk++) {
    for (let r = 0; r < R; r++) mul.push(`let xv${r}_${kk} = bitcast<f32>(xs[${kk * BT}u + ${xRow(r)}]);`);
    for (let c = 0; c < C; c++) mul.push(`let wv${c}_${kk} = bitcast<f32>(ws[${kk * BO}u + ${wCol(c)}]);`);
    for (let r = 0; r < R; r++)
      for (let c = 0; c < C; c++) {
        const next = `s${r}_${c}_${kk}`;
        mul.push(`let ${next} = ${cur[r][c]} + xv${r}_${kk} * wv${c}_${kk};`);
        cur[r][c] = next;
      }
  }
  for (let r = 0; r < R; r++) for (let c = 0; c < C; c++) mul.push(`a${r}_${c} = ${cur[r][c]};`);
  const decl: string[] = [];
  for (let r = 0; r < R; r++) for (let c = 0; c < C; c++) decl.push(`var a${r}_${c}: f32 = 0.0;`);
  const store: string[] = [];
  for (let r = 0; r < R; r++) {
    store.push(`{`, `  let t = t0 + ${xRow(r)};`, `  if (t < u.T) {`);
    for (let p = 0; p < C / 2; p++) {
      const o = `o0 + wc + ${2 * p * WO}u`;
      if (evenO) {
        store.push(`    if (${o} < u.O) { y[(t * u.O + ${o}) >> 1u] = pack_bf16(a${r}_${2 * p}, a${r}_${2 * p + 1}); }`);
      } else {
        for (let h = 0; h < 2; h++) store.push(`    if (${o} + ${h}u < u.O) { store_half(t * u.O + ${o} + ${h}u, f32_to_bf16(a${r}_${2 * p + h})); }`);
      }
    }
    store.push(`  }`, `}`);
  }
  const storeHalf = evenO
    ? ''
    : `fn store_half(i: u32, bits: u32) {
  let s = (i & 1u) * 16u;
  atomicAnd(&y[i >> 1u], ~(0xffffu << s));
  atomicOr(&y[i >> 1u], bits << s);
}`;
  const wgsl = `${BF16_WGSL}
${pre.wgsl}
${storeHalf}
var<workgroup> xs: array<u32, ${KT * BT}>;
var<workgroup> ws: array<u32, ${KT * BO}>;
@compute @workgroup_size(${WG})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let tile = wid.x + wid.y * u.groupsX;
  if (tile >= u.tiles) { return; }
  let t0 = (tile / u.tilesO) * ${BT}u;
  let o0 = (tile % u.tilesO) * ${BO}u;
  let tr = lid / ${WO}u;
  let wc = 2u * (lid % ${WO}u);
  ${decl.join('\n  ')}
  for (var k0 = 0u; k0 < u.K; k0 = k0 + ${KT}u) {
    ${stage('x', 'xs', BT, 't0', 'u.T', '0u').join('\n    ')}
    ${stage('w', 'ws', BO, 'o0', 'u.O', '0x80000000u').join('\n    ')}
    workgroupBarrier();
    ${mul.join('\n    ')}
    workgroupBarrier();
  }
  ${store.join('\n  ')}
}`;
  return { wgsl, bindings: pre.bindings };
}

function checkShapes(inputs: (TensorInfo | null)[], outputs: (TensorInfo | null)[]): { T: number; K: number; O: number } {
  const x = requireTyped(inputs[0], 'linear: input x', 'bf16');
  const w = requireTyped(inputs[1], 'linear: input w', 'bf16');
  const y = requireTyped(outputs[0], 'linear: output y', 'bf16');
  if (w.shape.length !== 2) throw new Error(`linear: w must be [out,in], got [${w.shape.join(',')}]`);
  const [O, K] = w.shape;
  if (x.shape.length < 1 || x.shape[x.shape.length - 1] !== K) {
    throw new Error(`linear: x [${x.shape.join(',')}] does not end in K = ${K} of w [${w.shape.join(',')}]`);
  }
  const T = numelOf(x.shape.slice(0, -1));
  const want = [...x.shape.slice(0, -1), O];
  if (y.shape.length !== want.length || y.shape.some((d, i) => d !== want[i])) {
    throw new Error(`linear: y [${y.shape.join(',')}] should be [${want.join(',')}]`);
  }
  return { T, K, O };
}

/** A tiling's short name, e.g. r4c4w4cols-vec4u1 or wg-r8c8-t1x8-k16 (the benchmark's variant syntax). */
export function tilingName(tl: LinearTiling | WorkgroupTiling): string {
  if ('kind' in tl && tl.kind === 'workgroup') return `wg-r${tl.rows}c${tl.cols}-t${tl.wgRows}x${tl.wgCols}-k${tl.kTile}`;
  const r = tl as LinearTiling;
  return `r${r.rows}c${r.cols}w${r.wgSize}${r.fast}-${r.load}u${r.unroll}${r.chain ? 'ch' : ''}`;
}

function workgroupDispatch(tl: WorkgroupTiling, T: number, K: number, O: number): KernelDispatch {
  checkWorkgroupTiling(tl);
  const evenK = K % 2 === 0;
  const evenO = O % 2 === 0;
  const tilesO = Math.ceil(O / (tl.cols * tl.wgCols));
  const tiles = tilesO * Math.ceil(T / (tl.rows * tl.wgRows));
  const wg = tl.wgRows * tl.wgCols;
  const kernel = workgroupKernel(tl, evenK, evenO);
  const key = `linear-${tilingName(tl)}-${evenK ? 'word' : 'elem'}-${evenO ? 'pairs' : 'atomic'}`;
  return flatDispatch(key, kernel.wgsl, kernel.bindings, tiles * wg, wg, [T, K, O, tilesO, tiles]);
}

/**
 * y = x w^T with every output's sum in the reference's k order. `tiling` picks the kernel:
 * a register tiling runs where K is a multiple of its k step and O is even, other shapes
 * take the workgroup-tiled kernel (DEFAULT_WORKGROUP_TILING); a workgroup tiling runs on any shape.
 */
export function planLinear(
  inputs: (TensorInfo | null)[],
  outputs: (TensorInfo | null)[],
  tiling: LinearTiling | WorkgroupTiling = DEFAULT_LINEAR_TILING,
): KernelPlan {
  const { T, K, O } = checkShapes(inputs, outputs);
  if ('kind' in tiling && tiling.kind === 'workgroup') {
    checkWorkgroupTiling(tiling);
    if (T * O === 0) return { scratch: [], dispatches: [] };
    return { scratch: [], dispatches: [workgroupDispatch(tiling, T, K, O)] };
  }
  const reg = tiling as LinearTiling;
  checkTiling(reg);
  if (T * O === 0) return { scratch: [], dispatches: [] };
  let dispatch: KernelDispatch;
  if (K % tilingKStep(reg) === 0 && O % 2 === 0 && K > 0) {
    const tilesO = Math.ceil(O / reg.cols);
    const tilesT = Math.ceil(T / reg.rows);
    const tiled = tiledKernel(reg);
    dispatch = flatDispatch(`linear-tiled-${tilingName(reg)}`, tiled.wgsl, tiled.bindings, tilesO * tilesT, reg.wgSize, [T, K, O, tilesO, tilesT]);
  } else {
    dispatch = workgroupDispatch(DEFAULT_WORKGROUP_TILING, T, K, O);
  }
  return { scratch: [], dispatches: [dispatch] };
}

export const linearPlanner: KernelPlanner = (inputs, outputs) => planLinear(inputs, outputs);
