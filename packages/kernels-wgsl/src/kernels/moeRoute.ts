// moeRoute: the router after the logits GEMM, as core's moeRoute (layers/moe/moeMath.ts):
// per token, softmax in fp32 (max-subtracted, exp_f32, the sum over experts in canonical
// order v1: expert e into lane (e / 8) % 64 of a private array, then the butterfly; p = e / sum), top-k by a selection loop that keeps the lower index on ties (strict >,
// a taken-bit mask, so even NaN probabilities are chosen in the CPU's order), renormalized
// over the k in top-k order when normTopkProb, one rounding to bf16. Tokens are independent:
// each invocation routes two consecutive tokens, so it writes the 2K packed weights of its
// pair as whole words (word-aligned for any K) and no two invocations share a word.
// E, K and normTopkProb are model constants, baked into the WGSL (private arrays need
// constant sizes); T is a uniform.
import { torchCpuTiesRefusal } from '@hcsp/core';
import type { KernelPlanner } from '../kernelProgram.ts';
import { BF16_WGSL } from '../wgsl/bf16.wgsl.ts';
import { bf16Buf, buf, preamble } from '../wgsl/bindings.wgsl.ts';
import { canonicalSerialAddWgsl, canonicalSerialButterflyWgsl } from '../wgsl/canonicalSum.wgsl.ts';
import { FP32_MATH_WGSL } from '../wgsl/fp32Math.wgsl.ts';
import { flatDispatch, flatMain, readInput, writeOutput } from './planParts.ts';

const WG = 64;

const ROUTE = preamble(['rows', 'pairs', 'groupsX'], [bf16Buf('logits', readInput(0)), buf('ids', writeOutput(0), 'i32'), buf('weights', writeOutput(1))]);

function routeWgsl(E: number, K: number, normTopkProb: boolean): string {
  return `${BF16_WGSL}${FP32_MATH_WGSL}
const E: u32 = ${E}u;
const K: u32 = ${K}u;
${ROUTE.wgsl}
var<private> p: array<f32, ${E}>;
var<private> chosen: array<f32, ${2 * K}>;

// routes token t into ids[t*K ..] and chosen[slot*K ..] (fp32, rounded by the store)
fn route(t: u32, slot: u32) {
  let row = t * E;
  // Math.max semantics: a NaN logit makes the max NaN
  var mx = f32_from_bits(0xff800000u);
  for (var e = 0u; e < E; e = e + 1u) {
    let v = logits_f32(row + e);
    if (v > mx || is_nan_f32(v)) { mx = v; }
  }
  var lanes: array<f32, 64>;
  for (var e = 0u; e < E; e = e + 1u) {
    p[e] = exp_f32(logits_f32(row + e) - mx);
    ${canonicalSerialAddWgsl('lanes', 'e', 'p[e]')}
  }
  ${canonicalSerialButterflyWgsl('lanes')}
  let sum = lanes[0];
  for (var e = 0u; e < E; e = e + 1u) { p[e] = p[e] / sum; }
  var taken: array<u32, ${Math.ceil(E / 32)}>;
  for (var k = 0u; k < K; k = k + 1u) {
    var best = -1;
    for (var e = 0u; e < E; e = e + 1u) {
      if ((taken[e >> 5u] & (1u << (e & 31u))) == 0u && (best < 0 || p[e] > p[u32(best)])) { best = i32(e); }
    }
    let b = u32(best);
    taken[b >> 5u] = taken[b >> 5u] | (1u << (b & 31u));
    ids[t * K + k] = best;
    chosen[slot * K + k] = p[b];
  }
${
  normTopkProb
    ? `  var norm: f32 = 0.0;
  for (var k = 0u; k < K; k = k + 1u) { norm = norm + chosen[slot * K + k]; }
  for (var k = 0u; k < K; k = k + 1u) { chosen[slot * K + k] = chosen[slot * K + k] / norm; }`
    : ''
}
}

${flatMain(
  WG,
  'u.pairs',
  `let t0 = 2u * inv;
  route(t0, 0u);
  var count = K;
  if (t0 + 1u < u.rows) {
    route(t0 + 1u, 1u);
    count = 2u * K;
  }
  // elements [t0*K, t0*K + count): t0*K is even, so they start on a word
  let base = (t0 * K) >> 1u;
  for (var q = 0u; 2u * q < count; q = q + 1u) {
    var word = f32_to_bf16(chosen[2u * q]);
    if (2u * q + 1u < count) { word = word | (f32_to_bf16(chosen[2u * q + 1u]) << 16u); }
    weights[base + q] = word;
  }`,
)}`;
}

export const moeRoutePlanner: KernelPlanner = (inputs, _outputs, attrs) => {
  if (attrs.ties === 'torch-cpu') throw new Error(torchCpuTiesRefusal('moeRoute', 'webgpu'));
  const [T, E] = inputs[0]!.shape;
  const K = attrs.topK as number;
  const norm = attrs.normTopkProb as boolean;
  if (T === 0) return { scratch: [], dispatches: [] };
  const pairs = Math.ceil(T / 2);
  return { scratch: [], dispatches: [flatDispatch(`moeRoute-e${E}k${K}${norm ? 'n' : ''}`, routeWgsl(E, K, norm), ROUTE.bindings, pairs, WG, [T, pairs])] };
};
