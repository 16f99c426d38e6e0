import { KernelTable } from '../../graph/kernelTable.ts';
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
// family's file; a new family is added here once).
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

export function cpuKernel(op: string): CpuKernel {
  return CPU_KERNELS.get(op);
}

export function cpuCollectiveKernel(op: string): CpuCollectiveKernel {
  return CPU_COLLECTIVE_KERNELS.get(op);
}
