import { describe, it, expect } from 'vitest';
import { bf16ToF32, f32ToBf16 } from '../../numerics/bf16.ts';
import { tensor, type Tensor } from '../../tensor/tensor.ts';
import { allReduce as allReduceRanks } from '../../collectives/allReduce.ts';
import { cpuCollectiveKernel, cpuKernel } from './index.ts';

const [allReduce, reduceScatter, allGather] = (['allReduce', 'reduceScatter', 'allGather'] as const).map(cpuCollectiveKernel);
const [shard, pad, trim] = (['shard', 'pad', 'trim'] as const).map(cpuKernel);

function bf16(rows: number, cols: number, value: (i: number) => number): Tensor {
  return tensor(
    'bf16',
    [rows, cols],
    Uint16Array.from({ length: rows * cols }, (_, i) => f32ToBf16(value(i))),
  );
}
const values = (t: Tensor | null) => Array.from(t!.data as Uint16Array, bf16ToF32);

describe('collectiveKernels', () => {
  it('rank-stamped integers through the kernels: inputs[rank][port] -> outputs[rank][port]', () => {
    const tp = 4;
    const inputs = Array.from({ length: tp }, (_, k) => [bf16(8, 3, (i) => (k + 1) * (i % 5) - k)]);
    const want = Array.from({ length: 24 }, (_, i) => [0, 1, 2, 3].reduce((s, k) => s + (k + 1) * (i % 5) - k, 0));
    for (const algorithm of ['ring', 'oneshot', 'ordered']) {
      const ar = allReduce(inputs, { algorithm, channels: 2, chunkElems: 16 });
      expect(ar.map((ports) => values(ports[0]))).toEqual(new Array(tp).fill(want));
      const rs = reduceScatter(inputs, { algorithm });
      expect(rs.map((ports) => values(ports[0]))).toEqual([0, 1, 2, 3].map((r) => want.slice(r * 6, r * 6 + 6)));
      const ag = allGather(rs, {});
      expect(ag.map((ports) => values(ports[0]))).toEqual(new Array(tp).fill(want));
    }
  });

  it('the kernel needs channels and chunkElems (its declaration requires them); the collective itself defaults them', () => {
    const inputs = [[bf16(2, 2, (i) => i)], [bf16(2, 2, (i) => 2 * i)]];
    expect(() => allReduce(inputs, { algorithm: 'ring' })).toThrow(/rank 0: op allReduce: attribute 'channels' is required/);
    expect(() => allReduce(inputs, { algorithm: 'ring', channels: 1 })).toThrow(/rank 0: op allReduce: attribute 'chunkElems' is required/);
    expect(
      values(
        allReduceRanks(
          inputs.map(([x]) => x),
          { algorithm: 'ring' },
        )[1],
      ),
    ).toEqual([0, 3, 6, 9]);
  });

  it('shard, pad and trim read their attrs', () => {
    const x = bf16(5, 2, (i) => i + 1);
    const s = shard([x], { rank: 2, tp: 3, chunk: 2 })[0]!;
    expect(s.shape).toEqual([2, 2]);
    expect(values(s)).toEqual([9, 10, 0, 0]);
    const p = pad([x], { rows: 6 })[0]!;
    expect(p.shape).toEqual([6, 2]);
    expect(values(trim([p], { rows: 5 })[0])).toEqual(values(x));
  });

  it('bad input is named (by the declaration, for each rank): unknown or missing algorithm, bad attrs, mismatched ranks, rows not divisible', () => {
    const a = [bf16(6, 2, () => 1)];
    const ring = { algorithm: 'ring', channels: 1, chunkElems: 16 };
    expect(() => allReduce([a, a], { ...ring, algorithm: 'tree' })).toThrow(
      /op allReduce: attribute 'algorithm' must be one of ring, oneshot, ordered, got "tree"/,
    );
    expect(() => reduceScatter([a, a], {})).toThrow(/op reduceScatter: attribute 'algorithm' is required/);
    expect(() => allReduce([a, a], { ...ring, channels: 'two' })).toThrow(/op allReduce: attribute 'channels' must be an integer, got "two"/);
    expect(() => reduceScatter([a, a, a, a], { algorithm: 'ring' })).toThrow(/op reduceScatter: 6 rows do not split into tp 4/);
    expect(() => allGather([a, [bf16(3, 2, () => 1)]], {})).toThrow(/rank 1 has shape \[3,2\], rank 0 has \[6,2\]/);
    expect(() => allGather([a, []], {})).toThrow(/rank 1: op allGather: 0 inputs, expected 1 \(x\)/);
    expect(() => allGather([a, a], { tp: 3 })).toThrow(/op allGather: 2 ranks given, tp 3/);
    expect(() => shard(a, { rank: 0, tp: 2 })).toThrow(/op shard: attribute 'chunk' is required/);
    expect(() => shard([tensor('bf16', [], new Uint16Array(1))], { rank: 0, tp: 2, chunk: 1 })).toThrow(
      /op shard: input 'x' needs a leading \(row\) axis, got \[\]/,
    );
    expect(() => pad([null], { rows: 3 })).toThrow(/op pad: input 'x' is required/);
  });
});
