import { describe, expect, it } from 'vitest';
import { routingDifferences, routingText } from './routingDiff.ts';
import { THREE_ROWS, topkIds } from '../../../../test/support/routedIds.ts';

const ids = topkIds;

describe('routingDifferences', () => {
  it('lists per MoE layer the rows whose expert sets differ; the same experts in another order route alike', () => {
    const a = new Map([
      ['layers.0.mlp.topk_ids', ids(THREE_ROWS)],
      ['layers.1.mlp.topk_ids', ids(THREE_ROWS)],
      ['layers.1.mlp.out', ids([[0, 0]])],
    ]);
    const b = new Map([
      [
        'layers.1.mlp.topk_ids',
        ids([
          [2, 1],
          [3, 7],
          [5, 6],
        ]),
      ],
      [
        'layers.0.mlp.topk_ids',
        ids([
          [1, 2],
          [3, 4],
          [6, 5],
        ]),
      ],
      ['layers.1.mlp.out', ids([[1, 1]])],
    ]);
    expect(routingDifferences(a, b)).toEqual([{ layer: 1, rows: [1], count: 3 }]);
    expect(routingDifferences(a, a)).toEqual([]);
  });

  it("lists the MTP head's router (mtp.mlp.topk_ids) at the layer given for it, after the layers; without one, skips it", () => {
    const side = (mtp: number[], layer0: number[]) =>
      new Map([
        ['mtp.mlp.topk_ids', ids([mtp])],
        ['layers.0.mlp.topk_ids', ids([layer0])],
      ]);
    const [a, b] = [side([1, 2], [1, 2]), side([1, 3], [2, 3])];
    expect(routingDifferences(a, b, 4)).toEqual([
      { layer: 0, rows: [0], count: 1 },
      { layer: 4, rows: [0], count: 1 },
    ]);
    expect(routingDifferences(a, b)).toEqual([{ layer: 0, rows: [0], count: 1 }]);
  });

  it('skips a layer one side lacks or holds in another shape', () => {
    const a = new Map([['layers.0.mlp.topk_ids', ids([[1, 2]])]]);
    expect(routingDifferences(a, new Map())).toEqual([]);
    expect(routingDifferences(a, new Map([['layers.0.mlp.topk_ids', ids([[1, 2, 3]])]]))).toEqual([]);
  });

  it('says which rows', () => {
    expect(routingText({ layer: 2, rows: [3, 17], count: 40 })).toBe('routing differs at rows 3, 17 (2 of 40)');
    expect(routingText({ layer: 2, rows: [1, 2, 3, 4], count: 9 }, 2)).toBe('routing differs at rows 1, 2, ... (2 more) (4 of 9)');
  });
});
