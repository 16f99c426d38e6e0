import { describe, expect, it } from 'vitest';
import { GraphBuilder } from '../graph/graphBuilder.ts';
import { f32ToBf16 } from './bf16.ts';
import { moeRoute } from '../layers/moe/moeMath.ts';
import { Rng } from './rng.ts';
import { refuseTorchCpuTies, torchCpuTopk } from './topkTies.ts';

// The port of torch's CPU top-k (libstdc++'s partial_sort / nth_element + sort) on its own:
// torch's measured answer on a tie, and that every answer is a top-k (the k largest values,
// largest first) on both of torch's branches. That ties land exactly where libstdc++ puts
// them is checked against the host device's std:: algorithms (test/torchCpuTies.crossBackend.test.ts).

/** values from a few levels, so that ties are everywhere */
function tieHeavy(rng: Rng, n: number, levels: number): number[] {
  return Array.from({ length: n }, () => rng.int(0, levels) / 2);
}

describe('torchCpuTopk', () => {
  it("gives torch's answer on equal values (torch.topk(tensor([0,1,0,1,1,0.]), 2) on the CPU: indices [1, 4])", () => {
    expect(Array.from(torchCpuTopk([0, 1, 0, 1, 1, 0], 2))).toEqual([1, 4]);
    // the same logits through moeRoute: the default rule keeps the lower experts
    const logits = Uint16Array.from([0, 1, 0, 1, 1, 0], (v) => f32ToBf16(v));
    expect(Array.from(moeRoute(logits, 1, 6, 2, true).ids)).toEqual([1, 3]);
    expect(Array.from(moeRoute(logits, 1, 6, 2, true, 'torch-cpu').ids)).toEqual([1, 4]);
  });

  it('returns k distinct indices of the k largest values, largest first, on both branches (k * 64 <= n: partial_sort; else nth_element + sort)', () => {
    const rng = new Rng(23);
    for (const k of [1, 2, 4, 10, 16]) {
      for (const n of [k, k + 1, 3 * k + 5, 64 * k - 1, 64 * k, 64 * k + 1]) {
        for (let rep = 0; rep < 4; rep++) {
          const v = tieHeavy(rng, n, 1 + rep);
          const got = Array.from(torchCpuTopk(v, k));
          expect(new Set(got).size).toBe(k);
          const want = [...v].sort((a, b) => b - a).slice(0, k);
          expect(
            got.map((i) => v[i]),
            `k ${k} n ${n}`,
          ).toEqual(want);
        }
      }
    }
  });

  it("puts NaN above every number (torch's comparator) and refuses k outside [1, n]", () => {
    expect(Array.from(torchCpuTopk([1, Number.NaN, 3, 2], 2))).toEqual([1, 2]);
    expect(() => torchCpuTopk([1, 2], 3)).toThrow('torch-cpu top-k: k 3 must be in [1, 2]');
    expect(() => torchCpuTopk([1, 2], 0)).toThrow('torch-cpu top-k: k 0 must be in [1, 2]');
  });
});

describe('refuseTorchCpuTies', () => {
  const graph = (ties: string | undefined) => {
    const b = new GraphBuilder(1, {});
    const x = b.input('logits', [2, 4], 'bf16');
    const ids = b.value('ids', [2, 2], 'i32', 0);
    const w = b.value('w', [2, 2], 'bf16', 0);
    b.node({
      op: 'moeRoute',
      rank: 0,
      layer: 0,
      scope: 'L0.mlp.route',
      inputs: [x],
      outputs: [ids, w],
      attrs: { topK: 2, normTopkProb: true, ...(ties ? { ties } : {}) },
    });
    b.markOutput(ids);
    return b.build();
  };

  it('names the op, the attribute, the backend and the node of a graph asking for ties=torch-cpu; passes the others', () => {
    expect(() => refuseTorchCpuTies(graph('torch-cpu'), 'webgpu')).toThrow(
      "moeRoute ties=torch-cpu runs on cpu and the host device; webgpu has only the 'lower-index' rule (node 0 at L0.mlp.route)",
    );
    expect(() => refuseTorchCpuTies(graph('lower-index'), 'webgpu')).not.toThrow();
    expect(() => refuseTorchCpuTies(graph(undefined), 'webgpu')).not.toThrow();
  });

  it('the op declaration refuses any other value', () => {
    expect(() => graph('stable')).toThrow(/ties/);
  });
});
