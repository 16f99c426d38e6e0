import { describe, expect, it } from 'vitest';
import { checkedPlanner } from './checkedPlanner.ts';
import { WGSL_KERNELS } from './index.ts';
import type { TensorInfo } from './kernelProgram.ts';

// A planner called outside a graph runs behind its op's declaration: what the declaration
// refuses never reaches the planner, and what the declaration allows but the WGSL cannot do is
// the planner's own refusal. Planning only: no GPU.

const info = (shape: number[], dtype = 'bf16'): TensorInfo => ({ shape, dtype });
const planner = (op: Parameters<typeof checkedPlanner>[0]) => checkedPlanner(op, WGSL_KERNELS.get(op));

describe('checkedPlanner', () => {
  it("applies the declaration's rule to the inputs and attributes", () => {
    expect(() => planner('shard')([info([7, 5])], [info([3, 5])], { rank: 0, tp: 2, chunk: 3 })).toThrow(
      "op shard: input 'x' has 7 rows, more than chunk 3 * tp 2",
    );
    expect(() => planner('add')([info([3, 4]), null], [info([3, 4])], {})).toThrow("op add: input 'b' is required");
    expect(() => planner('hcExpand')([info([3, 4])], [info([3, 8])], { streams: 2, extra: 1 })).toThrow("op hcExpand: unknown attribute 'extra'");
  });

  it("compares the outputs with the rule's", () => {
    const attrs = { streams: 4, lowRank: 10, contract: 'atom' };
    expect(() => planner('hcScaledSilu')([info([3, 10])], [info([3, 10]), info([3, 4])], attrs)).toThrow(
      "op hcScaledSilu: output 'raw' is bf16[3,4], but the op does not produce it for these inputs",
    );
    expect(() => planner('hcScaledSilu')([info([3, 14])], [null, info([3, 4])], attrs)).toThrow("op hcScaledSilu: output 'gate' is required");
    expect(planner('hcScaledSilu')([info([3, 14])], [info([3, 10]), null], attrs).dispatches).toHaveLength(1);
  });

  it("checks one rank's part of a collective's stacked input, tp from the attributes", () => {
    expect(() => planner('allReduce')([info([2, 4, 6], 'f32')], [info([4, 6], 'f32')], { algorithm: 'ring', channels: 2, chunkElems: 8, tp: 2 })).toThrow(
      "op allReduce: input 'x' is f32, expected bf16",
    );
    expect(() => planner('reduceScatter')([info([2, 3, 4])], [info([3, 4])], { algorithm: 'ring', tp: 2 })).toThrow(
      'op reduceScatter: 3 rows do not split into tp 2 equal blocks',
    );
    expect(planner('reduceScatter')([info([2, 4, 4])], [info([4, 4])], { algorithm: 'ordered', tp: 2 }).dispatches).toHaveLength(1);
  });

  it('leaves to the planner what the declaration allows and its WGSL cannot do', () => {
    const attrs = { heads: 2, headDim: 3, eps: 1e-6 };
    expect(() => planner('gdnGatedNorm')([info([5, 6]), info([5, 6]), info([3])], [info([5, 6])], attrs)).toThrow(
      'gdnGatedNorm: headDim 3 must be even (each row is written as whole packed words)',
    );
    expect(() => planner('moeRoute')([info([4, 8])], [info([4, 2], 'i32'), info([4, 2])], { topK: 2, normTopkProb: true, ties: 'torch-cpu' })).toThrow(
      'ties=torch-cpu',
    );
  });
});
