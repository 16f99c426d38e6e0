import { KernelTable } from '../../graph/kernelTable.ts';
import { checkedCollectiveKernel, checkedKernel } from '../checkedKernel.ts';
import type { CpuCollectiveKernel, CpuKernel, CpuKernelTable } from '../cpuKernel.ts';
import { attentionKernels } from './attentionKernels.ts';
import { basicKernels } from './basicKernels.ts';
import { collectiveKernels } from './collectiveKernels.ts';
import { gdnKernels } from './gdnKernels.ts';
import { hcKernels } from './hcKernels.ts';
import { headKernels } from './headKernels.ts';
import { moeKernels } from './moeKernels.ts';
import { pleKernels } from './pleKernels.ts';
import { quantKernels } from './quantKernels.ts';

// Every CPU reference kernel, one family file each (a new op's kernel goes into its
// family's file; a new family is added here once). Kernels are called through cpuKernel and
// cpuCollectiveKernel, which check the inputs against the op's declaration; the tables
// themselves are read only for their coverage.
const FAMILIES: CpuKernelTable[] = [
  basicKernels,
  hcKernels,
  collectiveKernels,
  gdnKernels,
  attentionKernels,
  quantKernels,
  moeKernels,
  pleKernels,
  headKernels,
];

export const CPU_KERNELS = new KernelTable<CpuKernel>(
  'cpu',
  FAMILIES.map((f) => f.perRank ?? {}),
);
export const CPU_COLLECTIVE_KERNELS = new KernelTable<CpuCollectiveKernel>(
  'cpu',
  FAMILIES.map((f) => f.collective ?? {}),
);

/** The CPU kernel of `op`, which checks its inputs against the op's declaration first (checkedKernel). */
export function cpuKernel(op: string): CpuKernel {
  return checkedKernel(op, CPU_KERNELS.get(op));
}

/** The CPU kernel of collective `op`, which checks each rank's inputs against the op's declaration first. */
export function cpuCollectiveKernel(op: string): CpuCollectiveKernel {
  return checkedCollectiveKernel(op, CPU_COLLECTIVE_KERNELS.get(op));
}
