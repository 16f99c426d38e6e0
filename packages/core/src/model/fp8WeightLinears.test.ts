import { describe, expect, it } from 'vitest';
import { runOnce } from '../backend/backend.ts';
import type { WeightSlice } from '../graph/graph.ts';
import { GraphBuilder } from '../graph/graphBuilder.ts';
import { fp8LinearPtpc } from '../layers/fp8Linear.ts';
import { linearBf16 } from '../layers/linearMath.ts';
import { bf16ArrayToF32, f32ToBf16 } from '../numerics/bf16.ts';
import { quantizeBf16RowsFp8 } from '../numerics/quant.ts';
import { Rng } from '../numerics/rng.ts';
import { CpuBackend } from '../reference/cpuBackend.ts';
import { sliceTensor } from '../tensor/axisSlice.ts';
import type { Tensor } from '../tensor/tensor.ts';
import { keepFp8Weights, type Fp8WeightLookup, type Fp8WeightParts } from './fp8WeightLinears.ts';
import type { WeightInfo, WeightSource } from './weightSource.ts';

const T = 3;
const K = 40;
const N = 24;
const rng = new Rng(7);
const bf16 = (shape: number[]): Tensor => ({
  dtype: 'bf16',
  shape,
  data: Uint16Array.from({ length: shape[0] * shape[1] }, () => f32ToBf16((rng.nextFloat() - 0.5) * 4)),
});
const x = bf16([T, K]);
const xRow = bf16([T, K / 2]);
// two FP8 weights (one row of zeros: scale 1) and one bf16 weight
const wq = quantizeBf16RowsFp8(bf16([N, K]).data as Uint16Array, N, K, 'e4m3fn', 'reciprocal');
wq.q.fill(0, 5 * K, 6 * K);
wq.scale[5] = 1;
const wo = quantizeBf16RowsFp8(bf16([N, K]).data as Uint16Array, N, K, 'e4m3fn', 'reciprocal');
const plainW = bf16([N, K]);

/** A source serving 'a' and 'o' as FP8 + scales (and, dequantized, as bf16) and 'p' as bf16. */
function source(): WeightSource & Fp8WeightLookup & { reads: string[] } {
  const tensors = new Map<string, Tensor>([
    ['a#q', { dtype: 'fp8e4m3fn', shape: [N, K], data: wq.q }],
    ['a#s', { dtype: 'f32', shape: [N], data: wq.scale }],
    ['o#q', { dtype: 'fp8e4m3fn', shape: [N, K], data: wo.q }],
    ['o#s', { dtype: 'f32', shape: [N], data: wo.scale }],
    ['p', plainW],
  ]);
  const reads: string[] = [];
  return {
    reads,
    has: (n) => tensors.has(n) || n === 'a' || n === 'o',
    info: (n): WeightInfo => (n === 'a' || n === 'o' ? { shape: [N, K], dtype: 'bf16' } : tensors.get(n)!),
    read: async (n: string, slice?: WeightSlice) => {
      reads.push(n);
      if (n === 'a' || n === 'o') throw new Error(`the dequantized '${n}' must not be read`);
      const t = tensors.get(n)!;
      return slice ? sliceTensor(t, slice) : t;
    },
    fp8PerChannel: (n: string): Fp8WeightParts | null => (n === 'a' || n === 'o' ? { q: `${n}#q`, scale: `${n}#s`, format: 'e4m3fn' } : null),
  };
}

/** ATOM's PTPC linear by hand: x quantized per token ('reciprocal'), W's rows as stored. */
function ptpcOf(xt: Tensor, rows: number[], cols: [number, number], w: { q: Uint8Array; scale: Float32Array }): Uint16Array {
  const k = cols[1] - cols[0];
  const xs = quantizeBf16RowsFp8(xt.data as Uint16Array, T, k, 'e4m3fn', 'reciprocal');
  const q = new Uint8Array(rows.length * k);
  rows.forEach((r, i) => {
    q.set(w.q.subarray(r * K + cols[0], r * K + cols[1]), i * k);
  });
  return fp8LinearPtpc(xs, { q, scale: Float32Array.from(rows, (r) => w.scale[r]) }, T, k, rows.length, 'e4m3fn', 'weightFirst');
}

describe('keepFp8Weights: linears over per-channel FP8 weights run as PTPC GEMMs on the stored bytes', () => {
  /** Linears over 'a' whole and column-sliced, 'o' row-sliced, the bf16 'p', and (withReshape) 'o' through a reshape. */
  function graphOf(withReshape: boolean) {
    const b = new GraphBuilder(1);
    b.input('x', [T, K], 'bf16');
    b.input('xr', [T, K / 2], 'bf16');
    const lin = (id: string, input: string, w: string, outF: number) => {
      b.value(id, [T, outF], 'bf16', 0);
      b.node({ op: 'linear', rank: 0, inputs: [input, w], outputs: [id], attrs: {}, scope: id, layer: 0 });
      b.markOutput(id);
    };
    lin('ya', 'x', b.weight({ name: 'a' }, [N, K]), N);
    lin(
      'ycol',
      'x',
      b.weight(
        {
          name: 'a',
          slice: {
            axis: 0,
            ranges: [
              [2, 9],
              [20, 24],
            ],
          },
        },
        [11, K],
      ),
      11,
    );
    lin('yrow', 'xr', b.weight({ name: 'o', slice: { axis: 1, ranges: [[K / 2, K]] } }, [N, K / 2]), N);
    lin('yp', 'x', b.weight({ name: 'p' }, [N, K]), N);
    // rows 3..5 of [a; o] (a concatenation, as the shared expert's gate_up) and a mixed one that stays bf16
    lin('ycat', 'x', b.weight({ name: 'ao', concat: ['a', 'o'], slice: { axis: 0, ranges: [[N - 2, N + 3]] } }, [5, K]), 5);
    lin('ymix', 'x', b.weight({ name: 'ap', concat: ['a', 'p'] }, [2 * N, K]), 2 * N);
    if (withReshape) lin('yre', 'x', b.weight({ name: 'o', reshape: [N, K] }, [N, K]), N);
    return b.build();
  }

  it('whole, column-parallel and row-parallel weights; one quantization per shared input; bf16 weights untouched', async () => {
    const graph = graphOf(true);
    const src = source();
    const { graph: g, linears } = keepFp8Weights(graph, src);
    expect(linears).toBe(4);
    expect(g.nodes.map((n) => n.op)).toEqual([
      'quantFp8PerToken',
      'fp8LinearPtpc',
      'fp8LinearPtpc',
      'quantFp8PerToken',
      'fp8LinearPtpc',
      'linear',
      'fp8LinearPtpc',
      'linear',
      'linear',
    ]);
    expect(g.nodes.map((n) => n.id)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8]);
    const weights = Object.values(g.values).filter((v) => v.kind === 'weight');
    expect(weights.map((v) => [v.weight!.name, v.dtype, v.shape])).toEqual(
      expect.arrayContaining([
        ['a#q', 'fp8e4m3fn', [N, K]],
        ['a#s', 'f32', [N]],
        ['a#q', 'fp8e4m3fn', [11, K]],
        ['a#s', 'f32', [11]],
        ['o#q', 'fp8e4m3fn', [N, K / 2]],
        ['o#s', 'f32', [N]],
        ['p', 'bf16', [N, K]],
        ['o', 'bf16', [N, K]],
        ['ao#fp8', 'fp8e4m3fn', [5, K]],
        ['ao#fp8_scale', 'f32', [5]],
        ['ap', 'bf16', [2 * N, K]],
      ]),
    );
    // a bf16 weight stays only for the reshaped ref (not rewritten); the whole and sliced 'a' are gone
    expect(weights.filter((v) => v.weight!.name === 'a' || v.weight!.name === 'o').map((v) => v.weight)).toEqual([{ name: 'o', reshape: [N, K] }]);
    expect(weights).toHaveLength(11);

    // run it without the reshaped ref (it reads the dequantized 'o', which the fake refuses)
    const runnable = keepFp8Weights(graphOf(false), src).graph;
    // ... and without the mixed concatenation, which reads the dequantized 'a' too
    runnable.nodes = runnable.nodes.filter((n) => n.outputs[0] !== 'ymix').map((n, id) => ({ ...n, id }));
    runnable.outputs = runnable.outputs.filter((o) => o !== 'ymix');
    for (const id of Object.keys(runnable.values)) if (id === 'ymix' || runnable.values[id].weight?.name === 'ap') delete runnable.values[id];
    const r = await runOnce(
      new CpuBackend(),
      runnable,
      new Map([
        ['x', x],
        ['xr', xRow],
      ]),
      src,
      { keep: ['ya', 'ycol', 'yrow', 'yp', 'ycat'] },
    );
    const all = Array.from({ length: N }, (_, i) => i);
    expect(r.values.get('ya')!.data).toEqual(ptpcOf(x, all, [0, K], wq));
    expect(r.values.get('ycol')!.data).toEqual(ptpcOf(x, [2, 3, 4, 5, 6, 7, 8, 20, 21, 22, 23], [0, K], wq));
    expect(r.values.get('yrow')!.data).toEqual(ptpcOf(xRow, all, [K / 2, K], wo));
    const cat = { q: new Uint8Array([...wq.q, ...wo.q]), scale: Float32Array.from([...wq.scale, ...wo.scale]) };
    expect(r.values.get('ycat')!.data).toEqual(ptpcOf(x, [N - 2, N - 1, N, N + 1, N + 2], [0, K], cat));
    expect(r.values.get('yp')!.data).toEqual(linearBf16(bf16ArrayToF32(x.data as Uint16Array), bf16ArrayToF32(plainW.data as Uint16Array), T, K, N));
    expect(src.reads.filter((n) => n === 'a' || n === 'o')).toEqual([]);
    expect(src.reads).toEqual(expect.arrayContaining(['a#q', 'a#s', 'o#q', 'o#s', 'p']));
  });

  it('a source without FP8 weights leaves the graph as it is', () => {
    const b = new GraphBuilder(1);
    b.input('x', [T, K], 'bf16');
    b.value('y', [T, N], 'bf16', 0);
    b.node({ op: 'linear', rank: 0, inputs: ['x', b.weight({ name: 'p' }, [N, K])], outputs: ['y'], attrs: {}, scope: 'y', layer: 0 });
    b.markOutput('y');
    const graph = b.build();
    const plain: WeightSource = { has: () => true, info: () => ({ shape: [N, K], dtype: 'bf16' }), read: async () => plainW };
    expect(keepFp8Weights(graph, plain)).toEqual({ graph, linears: 0, experts: 0 });
    expect(keepFp8Weights(graph, { ...plain, fp8PerChannel: () => null })).toEqual({ graph, linears: 0, experts: 0 });
  });
});

describe('keepFp8Weights: the routed experts', () => {
  const [H, I] = [8, 4];
  /** a rank's moeExperts over experts [2, 4) of '<g>' as moeRankWeights refers to them */
  function expertsGraph() {
    const b = new GraphBuilder(1);
    b.input('x', [T, H], 'bf16');
    b.input('ids', [T, 2], 'i32');
    b.input('w', [T, 2], 'bf16');
    b.value('routed', [T, H], 'f32', 0);
    const experts = { axis: 0, ranges: [[2, 4]] as [number, number][] };
    const gu = b.weight({ name: 'g.gate_up_proj', slice: experts, reshape: [2 * 2 * I, H] }, [2 * 2 * I, H]);
    const dn = b.weight({ name: 'g.down_proj', slice: experts, reshape: [2 * H, I] }, [2 * H, I]);
    b.node({
      op: 'moeExperts',
      rank: 0,
      inputs: ['x', 'ids', 'w', gu, dn],
      outputs: ['routed'],
      attrs: { firstExpert: 2, numLocal: 2, intermediate: I },
      scope: 'experts',
      layer: 0,
    });
    b.markOutput('routed');
    return b.build();
  }
  const lookup = (fp8: (name: string) => boolean): WeightSource & Fp8WeightLookup => ({
    has: () => true,
    info: (): WeightInfo => ({ shape: [4, 2 * I, H], dtype: 'bf16' }),
    read: async () => plainW,
    fp8PerChannel: (name: string): Fp8WeightParts | null => (fp8(name) ? { q: `${name}#fp8`, scale: `${name}#fp8_scale`, format: 'e4m3fn' } : null),
  });

  it("the rank's experts' stored FP8 parts, gate and up of each expert then the downs, on x quantized per token", () => {
    const r = keepFp8Weights(
      expertsGraph(),
      lookup(() => true),
    );
    expect(r).toMatchObject({ linears: 0, experts: 1 });
    expect(r.graph.nodes.map((n) => n.op)).toEqual(['quantFp8PerToken', 'moeExpertsFp8Ptpc']);
    const node = r.graph.nodes[1]!;
    expect(node.attrs).toEqual({ firstExpert: 2, numLocal: 2, intermediate: I, format: 'e4m3fn', style: 'reciprocal', scaleOrder: 'weightFirst' });
    const ref = (i: number) => r.graph.values[node.inputs[i]!]!;
    expect([4, 5, 6, 7].map((i) => [ref(i).dtype, ref(i).shape])).toEqual([
      ['fp8e4m3fn', [2 * 2 * I, H]],
      ['f32', [2 * 2 * I]],
      ['fp8e4m3fn', [2 * H, I]],
      ['f32', [2 * H]],
    ]);
    expect(ref(4).weight!.concat).toEqual(['g.2.gate_proj.weight#fp8', 'g.2.up_proj.weight#fp8', 'g.3.gate_proj.weight#fp8', 'g.3.up_proj.weight#fp8']);
    expect(ref(7).weight!.concat).toEqual(['g.2.down_proj.weight#fp8_scale', 'g.3.down_proj.weight#fp8_scale']);
    // the bf16 stacks are gone
    expect(Object.values(r.graph.values).filter((v) => v.kind === 'weight' && v.dtype === 'bf16')).toEqual([]);
  });

  it("the 'hf-eager' contract's bf16 accumulation (HF's bf16 experts loop): the bf16 op stays", () => {
    const graph = expertsGraph();
    const eager = { ...graph, nodes: graph.nodes.map((n) => ({ ...n, attrs: { ...n.attrs, bf16Accumulate: true } })) };
    expect(
      keepFp8Weights(
        eager,
        lookup(() => true),
      ),
    ).toEqual({ graph: eager, linears: 0, experts: 0 });
  });

  it('one expert of the rank not FP8: the bf16 op stays', () => {
    const graph = expertsGraph();
    expect(
      keepFp8Weights(
        graph,
        lookup((n) => n !== 'g.3.down_proj.weight'),
      ),
    ).toEqual({ graph, linears: 0, experts: 0 });
  });
});
