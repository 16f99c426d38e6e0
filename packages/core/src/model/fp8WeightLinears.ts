// FP8 stays FP8 (issue 23 item 2): a checkpoint that stores a weight as FP8 with
// per-output-channel scales (the PTPC-FP8 release, docs/ptpc-fp8-release.md) runs it as ATOM
// does, not as bf16 GEMMs on weights dequantized in JavaScript.
// The linears run as ATOM's PTPC GEMM: the activation rows are quantized per token by the
// separate kernel's arithmetic (ATOM LinearBase per_Token: get_hip_quant(per_Token) =
// per_token_quant_hip, 'reciprocal'), and fp8LinearPtpc multiplies them with the stored FP8
// bytes and scales. The weight reaches the backend as its FP8 bytes (copied as stored: a plain
// file read) and its F32 scales; the dequantized bf16 weight is no longer part of the graph.
// A weight concatenated from several (the shared expert's gate and up) is rewritten when
// every part is per-channel FP8 of one format: the FP8 parts and their scales concatenated alike.
// The routed experts run as ATOM's Fp8MoEMethod per_Token (aiter fused_moe, two stages):
// moeExperts becomes moeExpertsFp8Ptpc on x quantized per token as above (fused_moe quantizes
// it with the same get_hip_quant(per_Token)) and the rank's experts' stored FP8 bytes and
// scales, the per-expert tensors concatenated (gate, up of each local expert; then the downs),
// when every one of them is per-channel FP8 of one format.
// Not rewritten (they stay bf16 GEMMs on dequantized weights): a weight read through a reshape
// or a row gather other than the experts'. The scale order is CK's MultiplyMultiply
// ('weightFirst'), as the GDN FP8 projection uses; production's tuned table may pick CK-tile
// for some shapes.
import type { Graph, GraphNode, ValueDecl, ValueId, WeightRef, WeightSlice } from '../graph/graph.ts';
import { linear } from '../graph/ops/basicOps.ts';
import { matrixWeightPort } from '../graph/ops/opDef.ts';
import { fp8Info, type Fp8Format } from '../numerics/fp8.ts';
import { PRODUCTION_QUANT_STYLE } from '../numerics/quant.ts';
import type { PtpcScaleOrder } from '../layers/fp8Linear.ts';
import type { WeightSource } from './weightSource.ts';

const LINEAR_WEIGHT = matrixWeightPort(linear);

export const FP8_WEIGHT_SCALE_ORDER: PtpcScaleOrder = 'weightFirst';

/** Where a weight's stored FP8 bytes and per-channel scales are served, under their own names. */
export interface Fp8WeightParts {
  /** the FP8 tensor [N, K] as stored */
  q: string;
  /** the scales as F32 [N] */
  scale: string;
  format: Fp8Format;
}

/** A weight source that can serve a weight's stored FP8 form, or that form in `format` (CheckpointWeightSource). */
export interface Fp8WeightLookup {
  fp8PerChannel?(name: string, format?: Fp8Format): Fp8WeightParts | null;
}

function weightId(ref: WeightRef): ValueId {
  // the id GraphBuilder.weight gives a ref
  return ref.slice ? `w:${ref.name}#${ref.slice.axis}:${ref.slice.ranges.map((r) => r.join('-')).join('+')}` : `w:${ref.name}`;
}

export interface Fp8WeightRewrite {
  graph: Graph;
  /** linears now run as FP8 GEMMs */
  linears: number;
  /** routed-expert nodes now run as moeExpertsFp8Ptpc */
  experts: number;
}

/** the per-expert checkpoint names of a rank's stacked expert refs ('<g>.gate_up_proj' / '<g>.down_proj' sliced to its experts), or null */
function expertNames(gateUp: WeightRef, down: WeightRef): { gateUp: string[]; down: string[] } | null {
  const m = /^(.*)\.gate_up_proj$/.exec(gateUp.name);
  if (!m || down.name !== `${m[1]}.down_proj` || gateUp.concat || down.concat || gateUp.gather || down.gather) return null;
  const range = (r: WeightRef): [number, number] | null => (r.slice?.axis === 0 && r.slice.ranges.length === 1 ? r.slice.ranges[0] : null);
  const [a, b] = [range(gateUp), range(down)];
  if (!a || !b || a[0] !== b[0] || a[1] !== b[1]) return null;
  const g = m[1];
  const experts = Array.from({ length: a[1] - a[0] }, (_, i) => a[0] + i);
  return { gateUp: experts.flatMap((e) => [`${g}.${e}.gate_proj.weight`, `${g}.${e}.up_proj.weight`]), down: experts.map((e) => `${g}.${e}.down_proj.weight`) };
}

/**
 * Rewrites every `linear` whose weight `source` stores as per-channel FP8 into
 * quantFp8PerToken(x) + fp8LinearPtpc(q, sx, qW, sw), in `format` (the target's; default:
 * the checkpoint's); an activation shared by several such linears (q, k, v) is quantized
 * once; and every `moeExperts` whose local experts are all stored per-channel FP8 into
 * moeExpertsFp8Ptpc on the same quantized x. Weight values no node reads any more are dropped.
 */
export function keepFp8Weights(graph: Graph, source: WeightSource & Fp8WeightLookup, format?: Fp8Format): Fp8WeightRewrite {
  if (!source.fp8PerChannel) return { graph, linears: 0, experts: 0 };
  const values: Record<ValueId, ValueDecl> = { ...graph.values };
  const nodes: Omit<GraphNode, 'id'>[] = [];
  const quantized = new Map<string, [ValueId, ValueId]>();
  let linears = 0;
  let experts = 0;
  const declareWeight = (ref: WeightRef, shape: number[], dtype: ValueDecl['dtype']): ValueId => {
    const id = weightId(ref);
    const have = values[id];
    if (have && (have.dtype !== dtype || have.shape.join(',') !== shape.join(',')))
      throw new Error(`graph: weight '${ref.name}' ('${id}') is declared ${have.dtype}[${have.shape.join(',')}], needed as ${dtype}[${shape.join(',')}]`);
    if (!have) values[id] = { id, shape, dtype, rank: null, kind: 'weight', weight: ref };
    return id;
  };
  const lookup = (name: string) => source.fp8PerChannel!(name, format);
  /** the FP8 form of a weight ref: its q and scale refs (without the slice) and format, or null */
  const fp8Of = (ref: WeightRef): { q: WeightRef; scale: WeightRef; format: Fp8Format } | null => {
    if (ref.reshape || ref.gather) return null;
    if (!ref.concat) {
      const p = lookup(ref.name);
      return p ? { q: { name: p.q }, scale: { name: p.scale }, format: p.format } : null;
    }
    const ps = ref.concat.map(lookup);
    if (ps.some((p) => !p || p.format !== ps[0]!.format)) return null;
    const got = ps as Fp8WeightParts[];
    return {
      q: { name: `${ref.name}#fp8`, concat: got.map((p) => p.q) },
      scale: { name: `${ref.name}#fp8_scale`, concat: got.map((p) => p.scale) },
      format: got[0].format,
    };
  };
  /** x [T, K] quantized per token in `fmt`, once per (x, format) */
  const quantizedX = (n: GraphNode, x: ValueId, fmt: Fp8Format): [ValueId, ValueId] => {
    const [T, K] = values[x].shape;
    const key = `${x}|${fmt}`;
    let xq = quantized.get(key);
    if (!xq) {
      xq = [`${x}~fp8_q`, `${x}~fp8_scale`];
      values[xq[0]] = { id: xq[0], shape: [T, K], dtype: fp8Info(fmt).dtype, rank: n.rank, kind: 'intermediate' };
      values[xq[1]] = { id: xq[1], shape: [T], dtype: 'f32', rank: n.rank, kind: 'intermediate' };
      nodes.push({
        op: 'quantFp8PerToken',
        rank: n.rank,
        inputs: [x],
        outputs: [...xq],
        attrs: { format: fmt, style: PRODUCTION_QUANT_STYLE.separate },
        scope: `${n.scope}_x_quant`,
        layer: n.layer,
      });
      quantized.set(key, xq);
    }
    return xq;
  };
  /** the per-expert FP8 parts of names, all of one format, concatenated (q and scales), or null */
  const fp8Concat = (label: string, names: string[]): { q: WeightRef; scale: WeightRef; format: Fp8Format } | null => {
    const ps = names.map(lookup);
    if (ps.length === 0 || ps.some((p) => !p || p.format !== ps[0]!.format)) return null;
    const got = ps as Fp8WeightParts[];
    return {
      q: { name: `${label}#fp8`, concat: got.map((p) => p.q) },
      scale: { name: `${label}#fp8_scale`, concat: got.map((p) => p.scale) },
      format: got[0].format,
    };
  };
  const rewriteExperts = (n: GraphNode): boolean => {
    // the 'hf-eager' contract's bf16 accumulator is HF's bf16 experts loop: no FP8 form
    if (n.attrs.bf16Accumulate === true) return false;
    const [x, ids, weights, gu, dn] = n.inputs;
    const [wGu, wDn] = [values[gu!], values[dn!]];
    if (wGu?.kind !== 'weight' || wDn?.kind !== 'weight' || !wGu.weight || !wDn.weight) return false;
    const names = expertNames(wGu.weight, wDn.weight);
    const label = `${wGu.weight.name}#${wGu.weight.slice!.ranges[0].join('-')}`;
    const g = names && fp8Concat(label, names.gateUp);
    const d = names && fp8Concat(`${wDn.weight.name}#${wDn.weight.slice!.ranges[0].join('-')}`, names.down);
    if (!g || !d || g.format !== d.format) return false;
    const dtype = fp8Info(g.format).dtype;
    const xq = quantizedX(n, x!, g.format);
    const qGu = declareWeight(g.q, [...wGu.shape], dtype);
    const sGu = declareWeight(g.scale, [wGu.shape[0]], 'f32');
    const qDn = declareWeight(d.q, [...wDn.shape], dtype);
    const sDn = declareWeight(d.scale, [wDn.shape[0]], 'f32');
    nodes.push({
      op: 'moeExpertsFp8Ptpc',
      rank: n.rank,
      inputs: [xq[0], xq[1], ids!, weights!, qGu, sGu, qDn, sDn],
      outputs: n.outputs,
      attrs: {
        firstExpert: n.attrs.firstExpert,
        numLocal: n.attrs.numLocal,
        intermediate: n.attrs.intermediate,
        format: g.format,
        style: PRODUCTION_QUANT_STYLE.separate,
        scaleOrder: FP8_WEIGHT_SCALE_ORDER,
      },
      scope: n.scope,
      layer: n.layer,
    });
    return true;
  };
  for (const n of graph.nodes) {
    if (n.op === 'moeExperts') {
      if (rewriteExperts(n)) experts++;
      else nodes.push(n);
      continue;
    }
    const w = n.op === 'linear' ? values[n.inputs[LINEAR_WEIGHT]!] : undefined;
    const ref = w?.kind === 'weight' ? w.weight : undefined;
    const parts = ref ? fp8Of(ref) : null;
    if (!parts || !ref || !w) {
      nodes.push(n);
      continue;
    }
    const x = n.inputs[0]!;
    const [outF] = w.shape;
    const dtype = fp8Info(parts.format).dtype;
    const xq = quantizedX(n, x, parts.format);
    // a column-parallel slice (rows) takes its rows' scales; a row-parallel one (columns) all of them
    const rowSlice: WeightSlice | undefined = ref.slice?.axis === 0 ? ref.slice : undefined;
    const qW = declareWeight({ ...parts.q, ...(ref.slice ? { slice: ref.slice } : {}) }, [...w.shape], dtype);
    const sw = declareWeight({ ...parts.scale, ...(rowSlice ? { slice: rowSlice } : {}) }, [outF], 'f32');
    nodes.push({
      op: 'fp8LinearPtpc',
      rank: n.rank,
      inputs: [xq[0], xq[1], qW, sw],
      outputs: n.outputs,
      attrs: { format: parts.format, scaleOrder: FP8_WEIGHT_SCALE_ORDER },
      scope: n.scope,
      layer: n.layer,
    });
    linears++;
  }
  if (linears === 0 && experts === 0) return { graph, linears, experts };
  const read = new Set<ValueId>([...graph.outputs]);
  for (const n of nodes) for (const id of n.inputs) if (id !== null) read.add(id);
  for (const [id, v] of Object.entries(values)) if (v.kind === 'weight' && !read.has(id)) delete values[id];
  return { graph: { ...graph, values, nodes: nodes.map((n, id) => ({ ...n, id })) }, linears, experts };
}
