// The workgroup-tiled exact GEMM y[t,o] = out(sum_k x[t,k] * w[o,k]) (w [O,K]) of bf16 x and
// w, used by linear: every output's sum is the reference's, k = 0..K-1 ascending, one fp32
// add at a time from +0, on exact products (a bf16 x bf16 product fits in fp32), so fused or
// separate multiply-adds give the same bits.
// A workgroup owns a BT x BO tile of y (BT = rows * wgRows, BO = cols * wgCols) and walks k in
// steps of kTile. Each step stages x[t0.., k0..] and w[o0.., k0..] in workgroup memory,
// k-major, as the elements' fp32 bits, then every invocation adds kTile products into each
// of its rows x cols accumulators, k ascending. Terms past K are staged as x = +0, w = -0:
// their product -0 leaves any sum unchanged (acc + -0 == acc for every acc, -0 and NaN
// included), so edge tiles add nothing; rows and outputs past T and O come from clamped
// loads and are never stored.
// Invocation (tr, tc) owns rows t0 + tr + r * wgRows and output pairs o0 + 2 (tc + p * wgCols)
// + {0, 1}: neighbouring invocations read neighbouring workgroup words (no bank conflicts on
// a GPU), and with one invocation row (wgRows = 1) every x read has a constant index, which
// SwiftShader turns into one scalar load and a broadcast instead of a per-lane gather.
// A pair is one whole y word when O is even; with O odd a word can straddle two tiles, so
// each half is written by atomicAnd/atomicOr on its own 16 bits (disjoint bits: the two
// writers commute).
// On SwiftShader (a workgroup on one CPU thread, a switch at every barrier) staging costs
// more than it saves: see linear.ts for the measurements and the register-tiled kernel the
// planner prefers there.
import type { KernelBinding, KernelDispatch } from '../kernelProgram.ts';
import { buf, type BufferDecl, preamble } from '../wgsl/bindings.wgsl.ts';
import { flatDispatch, writeOutput } from './planParts.ts';

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
  /** k elements of x and w staged in workgroup memory per step (a multiple of 4) */
  kTile: number;
}

export const DEFAULT_WORKGROUP_TILING: WorkgroupTiling = { kind: 'workgroup', rows: 8, cols: 8, wgRows: 1, wgCols: 8, kTile: 16 };

/** WebGPU's guaranteed maxComputeWorkgroupStorageSize. */
const WORKGROUP_BYTES = 16384;

export function checkWorkgroupTiling(tl: WorkgroupTiling): void {
  const int = (v: number, min: number, max: number) => Number.isInteger(v) && v >= min && v <= max;
  if (!int(tl.rows, 1, 32)) throw new Error(`gemm tiling: rows = ${tl.rows} is not an integer in [1, 32]`);
  if (!int(tl.cols, 2, 32) || tl.cols % 2 !== 0) throw new Error(`gemm tiling: cols = ${tl.cols} is not an even integer in [2, 32]`);
  if (!int(tl.wgRows, 1, 256) || !int(tl.wgCols, 1, 256) || tl.wgRows * tl.wgCols > 256) {
    throw new Error(`gemm tiling: wgRows x wgCols = ${tl.wgRows} x ${tl.wgCols} is not a workgroup of 1 to 256 invocations`);
  }
  if (!int(tl.kTile, 4, 256) || tl.kTile % 4 !== 0) throw new Error(`gemm tiling: kTile = ${tl.kTile} is not a multiple of 4 in [4, 256]`);
  const bytes = 4 * tl.kTile * (tl.rows * tl.wgRows + tl.cols * tl.wgCols);
  if (bytes > WORKGROUP_BYTES) throw new Error(`gemm tiling: the tiles need ${bytes} bytes of workgroup memory, more than ${WORKGROUP_BYTES}`);
}

export function workgroupTilingName(tl: WorkgroupTiling): string {
  return `wg-r${tl.rows}c${tl.cols}-t${tl.wgRows}x${tl.wgCols}-k${tl.kTile}`;
}

/** x's and w's buffers (bf16, two per u32 word, element i in the low half of word i / 2 when i is even) and what the GEMM writes. */
export interface GemmOperands {
  /** x then w (named 'x' and 'w'), then any other inputs the output needs; y is appended */
  buffers: BufferDecl[];
  /** WGSL that outBits needs (must include BF16_WGSL's f32_to_bf16) */
  wgsl: string;
  /** WGSL u32 expression: output (t, o)'s bf16 bits from its sum `acc` */
  outBits: string;
}

function tiledGemmKernel(ops: GemmOperands, tl: WorkgroupTiling, wordK: boolean, evenO: boolean): { wgsl: string; bindings: KernelBinding[] } {
  const { rows: R, cols: C, wgRows: WT, wgCols: WO, kTile: KT } = tl;
  const BT = R * WT;
  const BO = C * WO;
  const WG = WT * WO;
  const pre = preamble(['T', 'K', 'O', 'tilesO', 'tiles', 'groupsX'], [...ops.buffers, buf('y', writeOutput(0), evenO ? 'u32' : 'atomic<u32>')]);
  // the e-th staging unit of a tile: a word of two k's (when K is even) or one element; a
  // bf16's fp32 bits are its 16 bits shifted up
  const stage = (src: string, dst: string, tileRows: number, first: string, limit: string, pad: string): string[] => {
    const per = wordK ? KT / 2 : KT;
    const units = tileRows * per;
    const out: string[] = [];
    for (let i = 0; i < Math.ceil(units / WG); i++) {
      const body = [`let e = lid + ${i * WG}u;`, `let row = e / ${per}u;`, `let j = e % ${per}u;`, `let rr = min(${first} + row, ${limit} - 1u);`];
      if (wordK) {
        body.push(`let k = k0 + 2u * j;`, `let v = ${src}[select(0u, (rr * u.K + k) / 2u, k < u.K)];`);
        body.push(`${dst}[(2u * j) * ${tileRows}u + row] = select(${pad}, v << 16u, k < u.K);`);
        body.push(`${dst}[(2u * j + 1u) * ${tileRows}u + row] = select(${pad}, v & 0xffff0000u, k < u.K);`);
      } else {
        body.push(
          `let k = k0 + j;`,
          `let i = select(0u, rr * u.K + k, k < u.K);`,
          `let b = (${src}[i / 2u] >> ((i % 2u) * 16u)) & 0xffffu;`,
          `${dst}[j * ${tileRows}u + row] = select(${pad}, b << 16u, k < u.K);`,
        );
      }
      const guarded = units % WG !== 0 && (i + 1) * WG > units;
      out.push(`${guarded ? `if (lid + ${i * WG}u < ${units}u) ` : ''}{\n      ${body.join('\n      ')}\n    }`);
    }
    return out;
  };
  // one step: kTile products into every accumulator, chained through lets (SwiftShader makes
  // every store to a function var a masked blend) and stored once
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
        store.push(
          `    if (${o} < u.O) { y[(t * u.O + ${o}) >> 1u] = out_bits(a${r}_${2 * p}, t, ${o}) | (out_bits(a${r}_${2 * p + 1}, t, ${o} + 1u) << 16u); }`,
        );
      } else {
        for (let h = 0; h < 2; h++)
          store.push(`    if (${o} + ${h}u < u.O) { store_half(t * u.O + ${o} + ${h}u, out_bits(a${r}_${2 * p + h}, t, ${o} + ${h}u)); }`);
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
  const wgsl = `${ops.wgsl}
${pre.wgsl}
fn out_bits(acc: f32, t: u32, o: u32) -> u32 { return ${ops.outBits}; }
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

/** The dispatch of y [T,O] = x [T,K] w [O,K]^T under `tl`; `name` starts its pipeline key. */
export function tiledGemmDispatch(name: string, ops: GemmOperands, tl: WorkgroupTiling, T: number, K: number, O: number): KernelDispatch {
  checkWorkgroupTiling(tl);
  const wordK = K % 2 === 0;
  const evenO = O % 2 === 0;
  const tilesO = Math.ceil(O / (tl.cols * tl.wgCols));
  const tiles = tilesO * Math.ceil(T / (tl.rows * tl.wgRows));
  const wg = tl.wgRows * tl.wgCols;
  const kernel = tiledGemmKernel(ops, tl, wordK, evenO);
  const key = `${name}-${workgroupTilingName(tl)}-${wordK ? 'word' : 'elem'}-${evenO ? 'pairs' : 'atomic'}`;
  return flatDispatch(key, kernel.wgsl, kernel.bindings, tiles * wg, wg, [T, K, O, tilesO, tiles]);
}
