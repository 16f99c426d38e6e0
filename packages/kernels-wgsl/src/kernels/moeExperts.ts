// moeExperts: the routed sum of a rank's experts [firstExpert, firstExpert + numLocal), as
// core's moeRoutedSum (layers/moe/moeMath.ts). Only routed (token, expert) pairs are
// computed, laid out by (t, k) rather than grouped by expert: the GEMMs are per row (fp32,
// k in order, one rounding per output), so gathering or not changes no bit.
// 1. h: one invocation per (t, k) pair and TILE values of i: gate = bf(x_t . Wgu[i]),
//    up = bf(x_t . Wgu[I+i]), h = bf(bf(silu(gate)) * up); pairs routed off this rank's
//    experts write zeros that are never read. Scratch h [T*K, I rounded up to even] bf16.
// 2. routed: one invocation per t and TILE values of j: o = bf(h_(t,k) . Wdown[j]) and acc += bf(o * w_k)
//    for the token's local experts in ascending expert index (ties of a repeated id in k
//    order, as the CPU's per-expert lists), acc starting at 0, stored unrounded (f32).
// bf16 x bf16 products are exact in fp32, so the plain multiply-adds round once, as the CPU.
// Tiles (clamped at the edge, stores skipped) reuse each x / h load TILE times; no barriers.
import type { KernelBinding, KernelPlanner } from '../kernelProgram.ts';
import { BF16_WGSL, ROUND_BF16_WGSL } from '../wgsl/bf16.wgsl.ts';
import { bf16Buf, buf, type BufferDecl, preamble } from '../wgsl/bindings.wgsl.ts';
import { FP32_MATH_WGSL } from '../wgsl/fp32Math.wgsl.ts';
import { eachLocalChoiceWgsl } from '../wgsl/moeChoices.wgsl.ts';
import { flatDispatch, flatMain, readInput, readScratch, writeOutput, writeScratch } from './planParts.ts';

const WG = 64;
const H_SCRATCH = 'h';
/** h outputs (i) per invocation of dispatch 1, and routed outputs (j) per invocation of dispatch 2 */
const TILE = 4;

const UNIFORMS = ['rows', 'K', 'H', 'I', 'hw', 'first', 'numLocal', 'tiles', 'total', 'groupsX'];

/**
 * WGSL that walks a dot product's k in order for one row of `a` against TILE rows of `b`
 * (element offsets aOff and bs[c].off; `a_f32` is its element accessor), running `step(c, av, bv)` per k and c. With `vec`
 * (length and offsets multiples of 8) it reads one vec4<u32> (8 bf16) per row per
 * iteration, as linear.ts does; else one element at a time.
 */
function dotLoop(vec: boolean, a: string, bs: { buf: string; off: string }[], len: string, step: (c: number, av: string, bv: string) => string): string {
  if (!vec) {
    const body = [`let av = ${a}_f32(aOff + k);`];
    bs.forEach((b, c) => {
      body.push(`let bv${c} = ${b.buf}_f32(${b.off} + k);`, step(c, 'av', `bv${c}`));
    });
    return `for (var k = 0u; k < ${len}; k = k + 1u) {\n    ${body.join('\n    ')}\n  }`;
  }
  const body = [`let aw = ${a}[(aOff >> 3u) + kv];`];
  bs.forEach((b, c) => {
    body.push(`let bw${c} = ${b.buf}[((${b.off}) >> 3u) + kv];`);
  });
  for (const comp of ['x', 'y', 'z', 'w']) {
    for (const half of ['lo', 'hi']) {
      body.push(`let a_${comp}${half} = bf16_${half}(aw.${comp});`);
      bs.forEach((_, c) => {
        body.push(step(c, `a_${comp}${half}`, `bf16_${half}(bw${c}.${comp})`));
      });
    }
  }
  return `for (var kv = 0u; kv < (${len} >> 3u); kv = kv + 1u) {\n    ${body.join('\n    ')}\n  }`;
}

/** A bf16 GEMM operand: vec4<u32> words for dotLoop's vec path, else u32 words with `<name>_f32`. */
function operand(name: string, from: KernelBinding, vec: boolean): BufferDecl {
  return vec ? buf(name, from, 'vec4<u32>') : bf16Buf(name, from);
}

/** Dispatch 1's WGSL and bindings. */
function hKernel(vec: boolean): { wgsl: string; bindings: KernelBinding[] } {
  const pre = preamble(UNIFORMS, [
    operand('x', readInput(0), vec),
    buf('ids', readInput(1), 'i32'),
    operand('gu', readInput(3), vec),
    buf('h', writeScratch(H_SCRATCH)),
  ]);
  const rows: { buf: string; off: string }[] = [];
  for (let c = 0; c < TILE; c++) rows.push({ buf: 'gu', off: `go${c}` }, { buf: 'gu', off: `go${c} + u.I * u.H` });
  const loop = dotLoop(vec, 'x', rows, 'u.H', (r, av, bv) => `${r % 2 ? 'up' : 'g'}${r >> 1} = ${r % 2 ? 'up' : 'g'}${r >> 1} + ${av} * ${bv};`);
  const decl: string[] = [];
  for (let c = 0; c < TILE; c++) {
    decl.push(`let go${c} = (local * 2u * u.I + min(i0 + ${c}u, u.I - 1u)) * u.H;`, `var g${c}: f32 = 0.0;`, `var up${c}: f32 = 0.0;`);
  }
  const hv = (c: number) => `rbf(silu_f32(rbf(g${c}))) * rbf(up${c})`;
  const wgsl = `${BF16_WGSL}${FP32_MATH_WGSL}
${pre.wgsl}
${ROUND_BF16_WGSL}
${flatMain(
  WG,
  'u.total',
  `let pair = inv / u.tiles;
  let i0 = (inv % u.tiles) * ${TILE}u;
  let w0 = pair * u.hw + i0 / 2u;
  let rel = ids[pair] - i32(u.first);
  if (rel < 0 || rel >= i32(u.numLocal)) {
    for (var q = 0u; q < ${TILE / 2}u && i0 + 2u * q < u.I; q = q + 1u) { h[w0 + q] = 0u; }
    return;
  }
  let local = u32(rel);
  let aOff = (pair / u.K) * u.H;
  ${decl.join('\n  ')}
  ${loop}
  ${Array.from({ length: TILE / 2 }, (_, q) => `if (i0 + ${2 * q}u < u.I) { h[w0 + ${q}u] = pack_bf16(${hv(2 * q)}, select(0.0, ${hv(2 * q + 1)}, i0 + ${2 * q + 1}u < u.I)); }`).join('\n  ')}`,
)}`;
  return { wgsl, bindings: pre.bindings };
}

/** Dispatch 2's WGSL and bindings. */
function routedKernel(vec: boolean, bf16Acc: boolean): { wgsl: string; bindings: KernelBinding[] } {
  const pre = preamble(UNIFORMS, [
    buf('ids', readInput(1), 'i32'),
    bf16Buf('wts', readInput(2)),
    operand('down', readInput(4), vec),
    operand('h', readScratch(H_SCRATCH), vec),
    buf('routed', writeOutput(0)),
  ]);
  const rows = Array.from({ length: TILE }, (_, c) => ({ buf: 'down', off: `wo${c}` }));
  const loop = dotLoop(vec, 'h', rows, 'u.I', (c, av, bv) => `o${c} = o${c} + ${av} * ${bv};`);
  const acc = Array.from({ length: TILE }, (_, c) => `var acc${c}: f32 = 0.0;`);
  const perStep: string[] = [];
  for (let c = 0; c < TILE; c++) perStep.push(`let wo${c} = (local * u.H + min(j0 + ${c}u, u.H - 1u)) * u.I;`, `var o${c}: f32 = 0.0;`);
  // bf16Acc (hf-eager): each add rounded to bf16, as HF's bf16 index_add_ accumulator
  const add = Array.from({ length: TILE }, (_, c) =>
    bf16Acc ? `acc${c} = rbf(acc${c} + rbf(rbf(o${c}) * wk));` : `acc${c} = acc${c} + rbf(rbf(o${c}) * wk);`,
  );
  const store = Array.from({ length: TILE }, (_, c) => `if (j0 + ${c}u < u.H) { routed[t * u.H + j0 + ${c}u] = bitcast<u32>(acc${c}); }`);
  const wgsl = `${BF16_WGSL}
${pre.wgsl}
${ROUND_BF16_WGSL}
${flatMain(
  WG,
  'u.total',
  `let t = inv / u.tiles;
  let j0 = (inv % u.tiles) * ${TILE}u;
  ${acc.join('\n  ')}
  ${eachLocalChoiceWgsl(`let pair = t * u.K + u32(next) % u.K;
    let local = u32(next) / u.K;
    let aOff = pair * 2u * u.hw;
    let wk = wts_f32(pair);
    ${perStep.join('\n    ')}
    ${loop.replace(/\n/g, '\n  ')}
    ${add.join('\n    ')}`)}
  ${store.join('\n  ')}`,
)}`;
  return { wgsl, bindings: pre.bindings };
}

export const moeExpertsPlanner: KernelPlanner = (inputs, _outputs, attrs) => {
  const [first, numLocal, I] = ['firstExpert', 'numLocal', 'intermediate'].map((name) => attrs[name] as number);
  const [T, H] = inputs[0]!.shape;
  const [, K] = inputs[1]!.shape;
  if (T * H === 0) return { scratch: [], dispatches: [] };
  // h rows padded to a whole number of words, so pairs never share one
  const hw = Math.ceil(I / 2);
  const iTiles = Math.ceil(I / TILE);
  const jTiles = Math.ceil(H / TILE);
  const common = [T, K, H, I, hw, first, numLocal];
  // vec4 loads need every row start on a 16-byte boundary: H (x, gate_up) and I (h, down) multiples of 8
  const hVec = H % 8 === 0;
  const rVec = I % 8 === 0;
  const h = hKernel(hVec);
  const bf16Acc = attrs.bf16Accumulate === true;
  const r = routedKernel(rVec, bf16Acc);
  return {
    scratch: [{ name: H_SCRATCH, words: Math.max(1, T * K * hw) }],
    dispatches: [
      flatDispatch(`moeExperts-h${hVec ? '-vec4' : ''}`, h.wgsl, h.bindings, T * K * iTiles, WG, [...common, iTiles, T * K * iTiles]),
      flatDispatch(`moeExperts-routed${rVec ? '-vec4' : ''}${bf16Acc ? '-bf16acc' : ''}`, r.wgsl, r.bindings, T * jTiles, WG, [...common, jTiles, T * jTiles]),
    ],
  };
};
