import { KernelTable } from '../../graph/kernelTable.ts';
import { checkedCollectiveKernel, checkedKernel } from '../checkedKernel.ts';
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
// (reference/kernels/index.ts): a new op's exact kernel goes into its family's file. The float64
// device reads the tables (its graph's nodes were checked at open); a call outside a graph goes
// through exactKernel and exactCollectiveKernel, which check the inputs against the declaration.
const FAMILIES: ExactKernelTable[] = [basicExact, hcExact, collectiveExact, quantExact, headExact, gdnExact, attentionExact, moeExact, pleExact];

export const EXACT_KERNELS = new KernelTable<ExactKernel>(
  'exact',
  FAMILIES.map((f) => f.perRank ?? {}),
);
export const EXACT_COLLECTIVE_KERNELS = new KernelTable<ExactCollectiveKernel>(
  'exact',
  FAMILIES.map((f) => f.collective ?? {}),
);

/** The float64 kernel of `op`, which checks its inputs against the op's declaration first (checkedKernel). */
export function exactKernel(op: string): ExactKernel {
  return checkedKernel(op, EXACT_KERNELS.get(op));
}

/** The float64 kernel of collective `op`, which checks each rank's inputs against the op's declaration first. */
export function exactCollectiveKernel(op: string): ExactCollectiveKernel {
  return checkedCollectiveKernel(op, EXACT_COLLECTIVE_KERNELS.get(op));
}
