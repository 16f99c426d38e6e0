// Which GPU this process opens, as torchrun users expect: the runtime numbers only the devices
// the process can see (after HIP_VISIBLE_DEVICES, CUDA_VISIBLE_DEVICES, ROCR_VISIBLE_DEVICES),
// and the local rank indexes those. A scheduler that masks each rank to its own GPU leaves one
// visible device, which is then the rank's whatever its local rank says.

import { gpuRuntimeKind, type GpuKind } from './rocmDevices.ts';

export interface GpuSelection {
  /** the index among the visible devices that openGpu takes */
  index: number;
  /** why: 'HCSP_GPU_INDEX=2', 'LOCAL_RANK=3, the one visible GPU of HIP_VISIBLE_DEVICES=3', ... */
  reason: string;
  /** the masks set, as 'NAME=value' ('' when none) */
  masks: string;
}

/** the mask variables set for `kind`, as "NAME=value, NAME=value" ('' when none is set) */
export function gpuMasks(kind: GpuKind, env: NodeJS.ProcessEnv = process.env): string {
  return gpuRuntimeKind(kind)
    .maskVariables.filter((name) => env[name] !== undefined)
    .map((name) => `${name}=${env[name]}`)
    .join(', ');
}

function indexVar(env: NodeJS.ProcessEnv, name: string): number | undefined {
  const v = env[name];
  if (v === undefined) return undefined;
  if (!/^(0|[1-9][0-9]*)$/.test(v)) throw new Error(`rocm backend: ${name}='${v}' is not a GPU index (a non-negative integer)`);
  return Number(v);
}

const gpus = (n: number): string => `${n} GPU${n === 1 ? '' : 's'}`;

/**
 * The device index among the `visible` devices the `kind` runtime reports:
 * - HCSP_GPU_INDEX when set (it must be below the visible count);
 * - else the local rank (LOCAL_RANK from hcsp launch or torchrun, OMPI_COMM_WORLD_LOCAL_RANK
 *   under mpirun; 0 when neither is set) when it is below the visible count;
 * - else 0 when a mask is set and leaves exactly one device visible (the scheduler gave this
 *   rank its own GPU);
 * - else an error naming the local rank, the masks and their values, and the visible count.
 */
export function selectGpu(kind: GpuKind, visible: number, env: NodeJS.ProcessEnv = process.env): GpuSelection {
  const masks = gpuMasks(kind, env);
  const seen = `this process sees ${gpus(visible)} (${masks || `no ${gpuRuntimeKind(kind).maskVariables.join(', ')} set`})`;
  const forced = indexVar(env, 'HCSP_GPU_INDEX');
  if (forced !== undefined) {
    if (forced >= visible)
      throw new Error(`rocm backend, device ${kind}: HCSP_GPU_INDEX=${forced} names GPU ${forced}, but ${seen}; the index counts visible GPUs from 0`);
    return { index: forced, reason: `HCSP_GPU_INDEX=${forced}`, masks };
  }
  const localName = env.LOCAL_RANK !== undefined ? 'LOCAL_RANK' : env.OMPI_COMM_WORLD_LOCAL_RANK !== undefined ? 'OMPI_COMM_WORLD_LOCAL_RANK' : null;
  const local = localName === null ? 0 : indexVar(env, localName)!;
  const rankText = localName === null ? 'no local rank set (LOCAL_RANK, OMPI_COMM_WORLD_LOCAL_RANK)' : `${localName}=${local}`;
  if (local < visible) return { index: local, reason: rankText, masks };
  if (masks && visible === 1) return { index: 0, reason: `${rankText}, the one GPU visible through ${masks}`, masks };
  throw new Error(
    `rocm backend, device ${kind}: ${rankText} names GPU ${local}, but ${seen}. ` +
      `Start fewer ranks per node, mask each rank to its own GPU (e.g. ${gpuRuntimeKind(kind).suggestedMask}=<its GPU>), or set HCSP_GPU_INDEX`,
  );
}
