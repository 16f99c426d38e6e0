import { expect, it } from 'vitest';
import { CpuBackend, f32ToBf16, GraphBuilder, moeRoute, Rng, runOnce, tensor, type Backend, type Graph, type Tensor } from '@hcsp/core';
import { describeWithBackends } from './backends.ts';
import { NO_WEIGHTS } from './support/noWeights.ts';

// moeRoute and qsaSelect with ties=torch-cpu (core numerics/topkTies.ts, torch.topk's CPU rule)
// on many random rows full of exact ties, at sizes around torch's k * 64 <= n switch from
// std::partial_sort to std::nth_element + std::sort, with the model's k (router top-k 2, 4,
// 10, and 20, 40 for std::sort's introsort; QSA widths 4, 16). The host device calls libstdc++'s own algorithms, so it is the oracle
// for the TypeScript port the CPU reference runs: every index list must be the same. WGSL and
// the GPU kernels have no port: they refuse such a graph at preparation, naming the op.
const rng = new Rng(2323);

/** bf16 values from a few levels (exact in bf16): ties everywhere */
function tieHeavy(n: number, levels: readonly number[]): Tensor['data'] {
  return Uint16Array.from({ length: n }, () => f32ToBf16(levels[rng.int(0, levels.length)]!));
}

function oneNode(op: 'moeRoute' | 'qsaSelect', inputs: Tensor[], outs: { shape: number[]; dtype: 'i32' | 'bf16' }[], attrs: Record<string, unknown>) {
  const b = new GraphBuilder(1, { case: op });
  const feeds = new Map<string, Tensor>();
  const ins = inputs.map((t, i) => {
    const id = b.input(`in${i}`, [...t.shape], t.dtype);
    feeds.set(id, t);
    return id;
  });
  const outIds = outs.map((o, i) => b.value(`out${i}`, o.shape, o.dtype, 0));
  b.node({ op, rank: 0, layer: 0, scope: op, inputs: ins, outputs: outIds, attrs });
  for (const id of outIds) b.markOutput(id);
  return { graph: b.build(), feeds };
}

/** router cases: [T, E] logits, top k, at E on both sides of 64 k */
function routeCases() {
  const out = [];
  // k 20 and 40 reach std::sort's introsort (more than 16 of the k - 1 to sort)
  for (const k of [2, 4, 10, 20, 40]) {
    for (const E of [k + 1, 3 * k, 64 * k - 1, 64 * k, 64 * k + 1, 64 * k + 13, ...(k === 10 ? [512] : [])]) {
      const T = 24;
      const logits = tensor('bf16', [T, E], tieHeavy(T * E, [-1, 0, 0, 0.5, 1, 1]));
      out.push({
        k,
        E,
        ...oneNode(
          'moeRoute',
          [logits],
          [
            { shape: [T, k], dtype: 'i32' },
            { shape: [T, k], dtype: 'bf16' },
          ],
          { topK: k, normTopkProb: true, ties: 'torch-cpu' },
        ),
        logits,
      });
    }
  }
  return out;
}

/**
 * QSA cases: one indexer head of dim 2, q = [1, 0], block keys [s_b, 0] (compressRatio 1: row
 * p sees p + 1 blocks), scores relu(s_b) / fr(sqrt(2)) tie wherever the s_b do; the rows'
 * visible blocks run across 64 * width
 */
function selectCases() {
  const out = [];
  for (const width of [4, 16]) {
    for (const [r0, rows] of [
      [width, 2 * width],
      [64 * width - 3, 6],
    ] as const) {
      const tokens = r0 + rows;
      const q = tensor(
        'bf16',
        [rows, 2],
        Uint16Array.from({ length: rows * 2 }, (_, i) => f32ToBf16(i % 2 === 0 ? 1 : 0)),
      );
      const kb = tensor(
        'bf16',
        [tokens, 2],
        Uint16Array.from(tieHeavy(tokens * 2, [-1, 0.5, 1, 2, 2]), (v, i) => (i % 2 === 0 ? v : 0)),
      );
      out.push({
        width,
        r0,
        ...oneNode('qsaSelect', [q, kb], [{ shape: [rows, width], dtype: 'i32' }], {
          r0,
          tokens,
          nHeads: 1,
          headDim: 2,
          compressRatio: 1,
          width,
          ties: 'torch-cpu',
        }),
      });
    }
  }
  return out;
}

const ROUTES = routeCases();
const SELECTS = selectCases();

/** the same graph with the default rule */
function lowerIndex(graph: Graph): Graph {
  return { ...graph, nodes: graph.nodes.map((n) => ({ ...n, attrs: { ...n.attrs, ties: 'lower-index' } })) };
}

async function ids(backend: Backend, graph: Graph, feeds: Map<string, Tensor>): Promise<number[][]> {
  const r = await runOnce(backend, graph, feeds, NO_WEIGHTS);
  return graph.outputs.map((o) => Array.from(r.values.get(o)!.data));
}

/** the backends with a 'torch-cpu' rule: the CPU reference (the port) and the host device (libstdc++) */
function hasTorchCpuTies(backend: Backend): boolean {
  return backend.name === 'cpu' || (backend.name === 'rocm' && (backend as { device?: string }).device === 'host');
}

/**
 * Runs the cases on the backend: refused where it has no 'torch-cpu' rule (null), else each
 * case's index lists checked by `check`; returns how many differ from the default rule's.
 */
async function runCases<C extends { graph: Graph; feeds: Map<string, Tensor> }>(
  backend: Backend,
  op: string,
  cases: readonly C[],
  check: (c: C, got: number[][]) => Promise<void>,
): Promise<number | null> {
  if (!hasTorchCpuTies(backend)) {
    for (const c of cases) await expect(ids(backend, c.graph, c.feeds)).rejects.toThrow(`${op} ties=torch-cpu runs on cpu and the host device`);
    return null;
  }
  let flipped = 0;
  for (const c of cases) {
    const got = await ids(backend, c.graph, c.feeds);
    await check(c, got);
    const plain = await ids(REFERENCE, lowerIndex(c.graph), c.feeds);
    if (plain[0].some((v, i) => v !== got[0][i])) flipped++;
  }
  return flipped;
}

const REFERENCE = new CpuBackend();

describeWithBackends('top-k ties=torch-cpu', (backend, label) => {
  it('moeRoute: the experts and order of torch.topk on the CPU, as the TypeScript port and libstdc++ agree; refused where there is no port', async () => {
    const flipped = await runCases(backend(), 'moeRoute', ROUTES, async (c, got) => {
      const want = moeRoute(c.logits.data as Uint16Array, 24, c.E, c.k, true, 'torch-cpu');
      expect(got[0], `${label} k ${c.k} E ${c.E}`).toEqual(Array.from(want.ids));
      expect(got[1], `${label} k ${c.k} E ${c.E} weights`).toEqual(Array.from(want.weights));
    });
    // the rule is not the default one on most of these rows (a backend ignoring the attribute fails)
    if (flipped !== null) expect(flipped).toBeGreaterThan(ROUTES.length / 2);
  });

  it('qsaSelect: the set of blocks torch.topk picks on the CPU, ascending; refused where there is no port', async () => {
    const flipped = await runCases(backend(), 'qsaSelect', SELECTS, async (c, got) => {
      expect(got[0], `${label} width ${c.width} r0 ${c.r0}`).toEqual((await ids(REFERENCE, c.graph, c.feeds))[0]);
    });
    if (flipped !== null) expect(flipped).toBe(SELECTS.length);
  });
});
