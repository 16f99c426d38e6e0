import type { CpuCollectiveKernel, CpuKernel, CpuKernelTable } from '../cpuKernel.ts';
import { basicKernels } from './basicKernels.ts';
import { attentionKernels } from './attentionKernels.ts';
import { collectiveKernels } from './collectiveKernels.ts';
import { gdnKernels } from './gdnKernels.ts';
import { hcKernels } from './hcKernels.ts';
import { moeKernels } from './moeKernels.ts';
import { pleKernels } from './pleKernels.ts';
import { quantKernels } from './quantKernels.ts';

// Every CPU reference kernel, by op name. A missing op fails loudly at lookup.
const TABLES: CpuKernelTable[] = [basicKernels, hcKernels, collectiveKernels, gdnKernels, attentionKernels, quantKernels, moeKernels, pleKernels];

const perRank = new Map<string, CpuKernel>();
const collective = new Map<string, CpuCollectiveKernel>();
for (const t of TABLES) {
  for (const [op, k] of Object.entries(t.perRank ?? {})) perRank.set(op, k);
  for (const [op, k] of Object.entries(t.collective ?? {})) collective.set(op, k);
}

export function cpuKernel(op: string): CpuKernel {
  const k = perRank.get(op);
  if (!k) throw new Error(`cpu backend: no kernel for op '${op}'`);
  return k;
}

export function cpuCollectiveKernel(op: string): CpuCollectiveKernel {
  const k = collective.get(op);
  if (!k) throw new Error(`cpu backend: no collective kernel for op '${op}'`);
  return k;
}
