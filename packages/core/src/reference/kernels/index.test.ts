import { describe, expect, it } from 'vitest';
import { KernelTable } from '../../graph/kernelTable.ts';
import { CPU_COLLECTIVE_KERNELS, CPU_KERNELS } from './index.ts';

describe('cpu kernel tables', () => {
  it('cover every declared op: per-rank ops in the per-rank table, collectives in the collective table', () => {
    expect(CPU_KERNELS.missing((d) => !d.collective)).toEqual([]);
    expect(CPU_COLLECTIVE_KERNELS.missing((d) => Boolean(d.collective))).toEqual([]);
  });

  it('refuse an op core does not declare and an op given two kernels', () => {
    const k = () => [];
    expect(() => new KernelTable('x', [{ notAnOp: k } as never])).toThrow("x kernels: 'notAnOp' is not an op core declares");
    expect(() => new KernelTable('x', [{ add: k }, { add: k }])).toThrow("x kernels: op 'add' has two kernels");
    expect(() => new KernelTable('x', []).get('add')).toThrow("x: no kernel for op 'add'");
  });
});
