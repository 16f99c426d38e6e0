import { bf16ArrayToF32, bf16ToF32, f32ToBf16, roundBf16 } from '../../numerics/bf16.ts';
import { canonicalSumF32 } from '../../numerics/canonicalSum.ts';
import { expF32, sigmoidF32, siluF32 } from '../../numerics/fp32Math.ts';
import { topkIndices, type TopkTies } from '../../numerics/topkTies.ts';
import { linearBf16 } from '../linearMath.ts';

// MoE (model.md "MoE"), CPU reference on typed arrays. bf16 values travel as Uint16Array
// bit patterns; fp32 is emulated with Math.fround after every operation. Under TP/EP a rank
// owns a contiguous expert range and an intermediate slice of the shared expert, and
// returns a partial [T,H] sum; with one rank (all experts, whole shared expert) the partial
// is the unsharded output.
const fr = Math.fround;

function checkLength(what: string, arr: ArrayLike<number>, expected: number): void {
  if (arr.length !== expected) throw new Error(`moe: ${what} has ${arr.length} values, expected ${expected}`);
}

/** The top-k experts of every token and their bf16 routing weights, [T, K] each. */
export interface MoeRouting {
  ids: Int32Array;
  weights: Uint16Array;
}

/**
 * Router after the logits GEMM: softmax in fp32 (max-subtracted, expF32, the sum over the
 * experts e = 0..E-1 in canonical reduction order v1 (numerics/canonicalSum.ts), p = e / sum), top-k by probability, largest first, ties broken by
 * the lower expert index (torch.topk leaves ties unspecified; this is the order a stable
 * descending sort gives; `ties` 'torch-cpu': the experts and order torch.topk gives on the
 * CPU, numerics/topkTies.ts), then norm_topk_prob: p_k / sum of the k chosen probabilities
 * (fp32, summed in the top-k order), and one rounding w = bf(.). HF computes the softmax,
 * top-k and renormalization in fp32 and casts once, so no rounding in between.
 */
export function moeRoute(
  logits: Uint16Array,
  tokens: number,
  numExperts: number,
  topK: number,
  normTopkProb: boolean,
  ties: TopkTies = 'lower-index',
): MoeRouting {
  checkLength('router logits', logits, tokens * numExperts);
  if (!Number.isInteger(topK) || topK < 1 || topK > numExperts) throw new Error(`moe: topK ${topK} must be in [1, ${numExperts}]`);
  const ids = new Int32Array(tokens * topK);
  const weights = new Uint16Array(tokens * topK);
  const p = new Float32Array(numExperts);
  const chosenP = new Float32Array(topK);
  for (let t = 0; t < tokens; t++) {
    const row = t * numExperts;
    let max = -Infinity;
    for (let e = 0; e < numExperts; e++) max = Math.max(max, bf16ToF32(logits[row + e]));
    for (let e = 0; e < numExperts; e++) p[e] = expF32(fr(bf16ToF32(logits[row + e]) - max));
    const sum = canonicalSumF32(numExperts, (e) => p[e]);
    for (let e = 0; e < numExperts; e++) p[e] = fr(p[e] / sum);
    const rowIds = ids.subarray(t * topK, (t + 1) * topK);
    rowIds.set(topkIndices(p, topK, ties));
    for (let k = 0; k < topK; k++) chosenP[k] = p[rowIds[k]!]!;
    let norm = 0;
    for (let k = 0; k < topK; k++) norm = fr(norm + chosenP[k]);
    for (let k = 0; k < topK; k++) weights[t * topK + k] = f32ToBf16(normTopkProb ? fr(chosenP[k] / norm) : chosenP[k]);
  }
  return { ids, weights };
}

/** h = bf(bf(silu(gate)) * up) of rows laid out [gate (I) | up (I)], as HF's act_fn(gate) * up. */
export function moeSwiGlu(gateUp: Uint16Array, rows: number, intermediate: number): Uint16Array {
  checkLength('gate_up activations', gateUp, rows * 2 * intermediate);
  const h = new Uint16Array(rows * intermediate);
  for (let t = 0; t < rows; t++) {
    const base = t * 2 * intermediate;
    for (let i = 0; i < intermediate; i++) {
      const act = roundBf16(siluF32(bf16ToF32(gateUp[base + i])));
      h[t * intermediate + i] = f32ToBf16(fr(act * bf16ToF32(gateUp[base + intermediate + i])));
    }
  }
  return h;
}

/** A rank's routed experts: experts [firstExpert, firstExpert + numLocal), stacked weights. */
export interface MoeLocalExperts {
  firstExpert: number;
  numLocal: number;
  intermediate: number;
  /** the experts' gate_up_proj [2I, H] stacked along rows: [numLocal * 2I, H], decoded bf16 */
  gateUp: Float32Array;
  /** the experts' down_proj [H, I] stacked along rows: [numLocal * H, I], decoded bf16 */
  down: Float32Array;
}

/**
 * The routing pairs t * topK + k that each of this rank's experts [firstExpert, +numLocal)
 * serves, t ascending (a token chooses an expert at most once).
 */
export function localExpertPairs(routing: MoeRouting, tokens: number, topK: number, firstExpert: number, numLocal: number): number[][] {
  const pairs: number[][] = Array.from({ length: numLocal }, () => []);
  for (let t = 0; t < tokens; t++) {
    for (let k = 0; k < topK; k++) {
      const local = routing.ids[t * topK + k] - firstExpert;
      if (local >= 0 && local < numLocal) pairs[local].push(t * topK + k);
    }
  }
  return pairs;
}

/**
 * The routed sum of a rank's experts, in fp32 and not yet rounded: for every token,
 * sum over its chosen experts that this rank owns of bf(o_e * w_k), added in ascending
 * expert index (a rank's own subset of that order is again ascending, so every rank can
 * reproduce it alone; with all experts on one rank it is the unsharded order). Tokens are
 * grouped by expert and only routed (token, expert) pairs are computed: expert e gathers
 * its tokens (ascending t), gate_up = Linear(x_e, W_gu), h = swiglu, o_e = Linear(h, W_down),
 * each GEMM with the `linear` op's contract (fp32, k in order, one rounding per output),
 * which is per row, so gathering rows does not change any bit. `bf16Accumulate` (the
 * 'hf-eager' contract): each add rounded to bf16, acc = bf(acc + bf(o_e * w_k)), as HF's
 * experts loop index_add_s into a bf16 accumulator (the sum is then bf16-exact, so
 * moeCombine's rounding of it changes nothing).
 */
export function moeRoutedSum(
  x: Float32Array,
  tokens: number,
  hidden: number,
  routing: MoeRouting,
  topK: number,
  experts: MoeLocalExperts,
  bf16Accumulate = false,
): Float32Array {
  const { firstExpert, numLocal, intermediate: inter } = experts;
  checkLength('x', x, tokens * hidden);
  checkLength('routing ids', routing.ids, tokens * topK);
  checkLength('routing weights', routing.weights, tokens * topK);
  checkLength('stacked gate_up', experts.gateUp, numLocal * 2 * inter * hidden);
  checkLength('stacked down', experts.down, numLocal * hidden * inter);
  const acc = new Float32Array(tokens * hidden);
  const pairs = localExpertPairs(routing, tokens, topK, firstExpert, numLocal);
  for (let local = 0; local < numLocal; local++) {
    const mine = pairs[local];
    const n = mine.length;
    if (n === 0) continue;
    const xe = new Float32Array(n * hidden);
    mine.forEach((tk, i) => {
      const t = Math.floor(tk / topK);
      xe.set(x.subarray(t * hidden, (t + 1) * hidden), i * hidden);
    });
    const wGu = experts.gateUp.subarray(local * 2 * inter * hidden, (local + 1) * 2 * inter * hidden);
    const wDown = experts.down.subarray(local * hidden * inter, (local + 1) * hidden * inter);
    const h = moeSwiGlu(linearBf16(xe, wGu, n, hidden, 2 * inter), n, inter);
    const o = linearBf16(bf16ArrayToF32(h), wDown, n, inter, hidden);
    mine.forEach((tk, i) => {
      const t = Math.floor(tk / topK);
      const w = bf16ToF32(routing.weights[tk]);
      for (let j = 0; j < hidden; j++) {
        const contrib = roundBf16(fr(bf16ToF32(o[i * hidden + j]) * w));
        const sum = fr(acc[t * hidden + j] + contrib);
        acc[t * hidden + j] = bf16Accumulate ? roundBf16(sum) : sum;
      }
    });
  }
  return acc;
}

/**
 * out = bf(bf(routed) + bf(shared * bf(sigmoid(gateLogit)))), per row t; gateLogit [T,1] is
 * bf(x w_sg^T). The routed fp32 sum is rounded once (model.md "rounded once") before the
 * shared expert is added, as production's fused-MoE kernel writes bf16 and the add is a
 * separate bf16 op. Under TP this is the rank's partial: its own routed sum and shared slice
 * times the replicated gate.
 */
export function moeCombine(routed: Float32Array, shared: Uint16Array, gateLogit: Uint16Array, tokens: number, hidden: number): Uint16Array {
  checkLength('routed sum', routed, tokens * hidden);
  checkLength('shared expert output', shared, tokens * hidden);
  checkLength('shared expert gate logit', gateLogit, tokens);
  const out = new Uint16Array(tokens * hidden);
  for (let t = 0; t < tokens; t++) {
    const g = roundBf16(sigmoidF32(bf16ToF32(gateLogit[t])));
    for (let j = 0; j < hidden; j++) {
      const i = t * hidden + j;
      const s = roundBf16(fr(bf16ToF32(shared[i]) * g));
      out[i] = f32ToBf16(fr(roundBf16(routed[i]) + s));
    }
  }
  return out;
}

/** One rank's MoE weights as bf16 patterns (see moeWeights.ts for the slices). */
export interface MoeRankWeightData {
  /** gate.weight [E, H], replicated */
  router: Uint16Array;
  firstExpert: number;
  numLocal: number;
  /** owned experts' gate_up_proj stacked: [numLocal * 2I, H] */
  expertsGateUp: Uint16Array;
  /** owned experts' down_proj stacked: [numLocal * H, I] */
  expertsDown: Uint16Array;
  /** shared expert gate rows then up rows of this rank's slice: [2 * Is_r, H] */
  sharedGateUp: Uint16Array;
  /** shared expert down_proj columns of this rank's slice: [H, Is_r] */
  sharedDown: Uint16Array;
  /** shared_expert_gate.weight [1, H], replicated */
  sharedGate: Uint16Array;
}

export interface MoeShape {
  hidden: number;
  numExperts: number;
  topK: number;
  intermediate: number;
  /** this rank's slice of the shared expert intermediate */
  sharedIntermediate: number;
  normTopkProb: boolean;
}

/** Every stored value of one rank's MoE, in the order the graph computes them. */
export interface MoeRankResult {
  logits: Uint16Array;
  routing: MoeRouting;
  /** unrounded fp32 routed sum over the rank's experts */
  routed: Float32Array;
  /** Linear(h_slice, down[:, slice]) */
  shared: Uint16Array;
  sharedGateLogit: Uint16Array;
  /** the rank's partial output [T, H] */
  out: Uint16Array;
}

/** One rank's MoE on x [T,H] (bf16), op by op as moeGraph.ts wires it. */
export function moeForwardRank(x: Uint16Array, tokens: number, shape: MoeShape, w: MoeRankWeightData): MoeRankResult {
  const { hidden: H, numExperts: E, topK, intermediate: I, sharedIntermediate: Is } = shape;
  checkLength('x', x, tokens * H);
  const xf = bf16ArrayToF32(x);
  const logits = linearBf16(xf, bf16ArrayToF32(w.router), tokens, H, E);
  const routing = moeRoute(logits, tokens, E, topK, shape.normTopkProb);
  const routed = moeRoutedSum(xf, tokens, H, routing, topK, {
    firstExpert: w.firstExpert,
    numLocal: w.numLocal,
    intermediate: I,
    gateUp: bf16ArrayToF32(w.expertsGateUp),
    down: bf16ArrayToF32(w.expertsDown),
  });
  const sharedGu = linearBf16(xf, bf16ArrayToF32(w.sharedGateUp), tokens, H, 2 * Is);
  const sharedH = moeSwiGlu(sharedGu, tokens, Is);
  const shared = linearBf16(bf16ArrayToF32(sharedH), bf16ArrayToF32(w.sharedDown), tokens, Is, H);
  const sharedGateLogit = linearBf16(xf, bf16ArrayToF32(w.sharedGate), tokens, H, 1);
  const out = moeCombine(routed, shared, sharedGateLogit, tokens, H);
  return { logits, routing, routed, shared, sharedGateLogit, out };
}
