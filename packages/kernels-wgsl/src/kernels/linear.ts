// linear: y[t,o] = bf(sum_k x[t,k] * w[o,k]), w [O,K]. Every output accumulates in fp32 in
// k order 0..K-1 with one rounding at the end, exactly as the CPU reference; bf16 x bf16
// products are exact in fp32, so fused or separate multiply-add give the same bits.
// Tiled path (K a multiple of the k step, O even): each invocation owns a rows x cols
// register tile and walks k a load unit at a time with no shared memory and no barriers.
// Other shapes take the workgroup-tiled kernel of tiledGemm.ts (x and w k-tiles in workgroup
// memory, the same k order), which also takes any shape when asked for by its tiling.
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
// The workgroup-tiled kernel (tiledGemm.ts) against this default, T=256, 3 interleaved rounds,
// load 10-11 (2026-12-02), GFLOP/s median (best) of [T,10240]x[10240,324]^T / [T,320]x[320,10240]^T:
//   r8c8w8cols-u32u1ch (default)  2.27 (3.03) / 2.02 (2.22)
//   wg-r8c8-t1x8-k16              0.72 (0.72) / 0.41 (0.55)   x0.31 / x0.27
//   wg-r16c4-t1x16-k8             0.95 (1.17) / 0.57 (1.17)   x0.41 / x0.39
//   wg-r4c4-t4x4-k16              0.51 (0.59) / 0.32 (0.48)   x0.17 / x0.19
// SwiftShader runs a workgroup on one CPU thread: staging buys no reuse across cores, costs
// a scatter per staged word and two coroutine switches per k step, and the staged w reads are
// per-lane gathers as before; so the register tiling stays the default wherever it applies.
import type { KernelBinding, KernelDispatch, KernelPlan, KernelPlanner, TensorInfo } from '../kernelProgram.ts';
import { BF16_WGSL } from '../wgsl/bf16.wgsl.ts';
import { buf, type BufferDecl, preamble } from '../wgsl/bindings.wgsl.ts';
import { flatDispatch, flatMain, readInput, writeOutput } from './planParts.ts';
import {
  checkWorkgroupTiling,
  DEFAULT_WORKGROUP_TILING,
  tiledGemmDispatch,
  workgroupTilingName,
  type GemmOperands,
  type WorkgroupTiling,
} from './tiledGemm.ts';

export { DEFAULT_WORKGROUP_TILING, type WorkgroupTiling };

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
      ? `let o0 = (inv % u.tilesO) * ${C}u;\n  let t0 = (inv / u.tilesO) * ${R}u;`
      : `let t0 = (inv % u.tilesT) * ${R}u;\n  let o0 = (inv / u.tilesT) * ${C}u;`;
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

/** A tiling's short name, e.g. r4c4w4cols-vec4u1 or wg-r8c8-t1x8-k16 (the benchmark's variant syntax). */
export function tilingName(tl: LinearTiling | WorkgroupTiling): string {
  if ('kind' in tl && tl.kind === 'workgroup') return workgroupTilingName(tl);
  const r = tl as LinearTiling;
  return `r${r.rows}c${r.cols}w${r.wgSize}${r.fast}-${r.load}u${r.unroll}${r.chain ? 'ch' : ''}`;
}

// bf16 operands: an element's fp32 value is its bits << 16 (exact, no flushing)
const BF16_OPERANDS: GemmOperands = {
  buffers: [buf('x', readInput(0)), buf('w', readInput(1))],
  wgsl: BF16_WGSL,
  outBits: 'f32_to_bf16(acc)',
};

function workgroupDispatch(tl: WorkgroupTiling, T: number, K: number, O: number): KernelDispatch {
  return tiledGemmDispatch('linear', BF16_OPERANDS, tl, T, K, O);
}

/**
 * y = x w^T with every output's sum in the reference's k order. `tiling` picks the kernel:
 * a register tiling runs where K is a multiple of its k step and O is even, other shapes
 * take the workgroup-tiled kernel (DEFAULT_WORKGROUP_TILING); a workgroup tiling runs on any shape.
 * `inputs` are x [T, K] and w [O, K] as linear's declaration checks them.
 */
export function planLinear(inputs: (TensorInfo | null)[], tiling: LinearTiling | WorkgroupTiling = DEFAULT_LINEAR_TILING): KernelPlan {
  const [T, K] = inputs[0]!.shape;
  const [O] = inputs[1]!.shape;
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

export const linearPlanner: KernelPlanner = (inputs) => planLinear(inputs);
