// A session's weights through the addon's native loader (native/src/loader): every weight whose
// read is a plain copy of checkpoint bytes (core's planWeightRead over WeightSource.filePlan) is
// read in one batch, on the addon's threads, straight to the device; what the loader counted
// (bytes, NaN/Inf per source read) goes back to the weight source, which accounts for it as
// for its own reads (the CLI's NonFiniteWatch warns or refuses). Weights that need a conversion
// (FP8 dequantization, fp32 -> bf16) or have no file (synthetic weights) are left to the
// JavaScript path (GraphSession's loadWeight + upload).
import { planWeightRead, sameShape, type ValueDecl, type ValueId, type WeightReadPlan, type WeightSource } from '@hcsp/core';
import type { GpuDevice, NativeAddon, NativeTensor, WeightLoadRequest } from './nativeAddon.ts';
import { native } from './nativeErrors.ts';

/** HCSP_WEIGHT_LOADER: native (default) | js (every weight read in JavaScript and uploaded: the path to compare with) */
export const WEIGHT_LOADER_ENV = 'HCSP_WEIGHT_LOADER';
export type WeightLoaderMode = 'native' | 'js';

export function weightLoaderMode(env: NodeJS.ProcessEnv = process.env): WeightLoaderMode {
  const v = env[WEIGHT_LOADER_ENV];
  if (v === undefined || v === '' || v === 'native') return 'native';
  if (v === 'js') return 'js';
  throw new Error(`${WEIGHT_LOADER_ENV} must be native or js, got '${v}'`);
}

/** the plan of a weight the loader can place as it is stored, or null */
function plainPlan(source: WeightSource, decl: ValueDecl): WeightReadPlan | null {
  if (!decl.weight || decl.weight.gather === 'rows') return null;
  const plan = planWeightRead(source, decl.weight);
  // another dtype or shape than declared: the JavaScript path reads it and says what differs
  return plan && plan.dtype === decl.dtype && sameShape(plan.shape, decl.shape) ? plan : null;
}

/**
 * The weights of `decls` the native loader can read (plain copies of file bytes), placed on
 * `gpu` (null: the host device), by id; the source is told of each read (plannedRead), and a
 * refusal there frees everything loaded.
 */
export async function loadWeightsNatively(
  addon: NativeAddon,
  gpu: GpuDevice | null,
  source: WeightSource,
  decls: readonly ValueDecl[],
  options: { chunkBytes?: number; lanes?: number } = {},
): Promise<Map<ValueId, NativeTensor>> {
  const planned: { decl: ValueDecl; plan: WeightReadPlan }[] = [];
  for (const decl of decls) {
    const plan = plainPlan(source, decl);
    if (plan) planned.push({ decl, plan });
  }
  if (planned.length === 0) return new Map();
  const files: { path: string; identity?: string }[] = [];
  const fileIndex = new Map<string, number>();
  const requests: WeightLoadRequest[] = planned.map(({ decl, plan }) => {
    const runs = plan.reads.flatMap((r, part) => r.runs.map((run) => ({ run, part })));
    const ranges = new Float64Array(runs.length * 4);
    runs.forEach(({ run, part }, i) => {
      // the file the source opened there: the loader refuses another one put at the path since
      const key = `${run.file}\0${run.identity ?? ''}`;
      let f = fileIndex.get(key);
      if (f === undefined) fileIndex.set(key, (f = files.push({ path: run.file, identity: run.identity }) - 1));
      ranges.set([f, run.offset, run.bytes, part], i * 4);
    });
    return { name: decl.weight!.name, dtype: decl.dtype, shape: decl.shape, ranges, parts: plan.reads.length };
  });
  const result = await native(() => addon.loadWeights(files, requests, gpu, options));
  try {
    planned.forEach(({ plan }, i) => {
      plan.reads.forEach((read, part) => {
        const bytes = read.runs.reduce((n, r) => n + r.bytes, 0);
        source.plannedRead?.(read.name, read.slice, { bytes, nan: result.nonFinite[i][2 * part], inf: result.nonFinite[i][2 * part + 1] });
      });
    });
  } catch (e) {
    for (const t of result.tensors) addon.free(t);
    throw e;
  }
  return new Map(planned.map(({ decl }, i) => [decl.id, result.tensors[i]]));
}

/** a rocm device's DeviceOps.loadWeights over `source`, or undefined where the JavaScript path is asked for */
export function nativeWeightLoads(
  addon: NativeAddon,
  gpu: GpuDevice | null,
  source: WeightSource,
  mode: WeightLoaderMode,
): ((decls: readonly ValueDecl[]) => Promise<Map<ValueId, NativeTensor>>) | undefined {
  if (mode === 'js' || !source.filePlan) return undefined;
  return (decls) => loadWeightsNatively(addon, gpu, source, decls);
}
