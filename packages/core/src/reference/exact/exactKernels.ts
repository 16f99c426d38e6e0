import { KernelTable } from '../../graph/kernelTable.ts';
import { attentionExact } from './attentionExact.ts';
import { basicExact } from './basicExact.ts';
import { collectiveExact } from './collectiveExact.ts';
import type { ExactCollectiveKernel, ExactKernel, ExactKernelTable } from './exactTensor.ts';
import { gdnExact } from './gdnExact.ts';
import { hcExact } from './hcExact.ts';
import { headExact } from './headExact.ts';
import { moeExact } from './moeExact.ts';
import { pleExact } from './pleExact.ts';
import { quantExact } from './quantExact.ts';

// Every float64 ("exact") kernel, one family file each, keyed like the CPU reference's
// (reference/kernels/index.ts): a new op's exact kernel goes into its family's file.
const FAMILIES: ExactKernelTable[] = [basicExact, hcExact, collectiveExact, quantExact, headExact, gdnExact, attentionExact, moeExact, pleExact];

export const EXACT_KERNELS = new KernelTable<ExactKernel>(
  'exact',
  FAMILIES.map((f) => f.perRank ?? {}),
);
export const EXACT_COLLECTIVE_KERNELS = new KernelTable<ExactCollectiveKernel>(
  'exact',
  FAMILIES.map((f) => f.collective ?? {}),
);

export function exactKernel(op: string): ExactKernel {
  return EXACT_KERNELS.get(op);
}

export function exactCollectiveKernel(op: string): ExactCollectiveKernel {
  return EXACT_COLLECTIVE_KERNELS.get(op);
}
