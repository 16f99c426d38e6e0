import { MODEL_SUB_LAYERS, preparePrefill, PRESETS, runOnce, type Backend, type EngineStats, type PrefillOptions, type Tensor } from '@hcsp/core';
import { CpuBackend } from '@hcsp/core';

/** a case's prefill: a preset's name and the options that differ from the defaults below */
export interface EngineCaseOptions {
  config: string;
  tokens: number;
  tp: number;
  sp: PrefillOptions['sp'];
  fp8?: PrefillOptions['fp8'];
  /** where the PLE table lives (PrefillOptions.pleTable): the rocm backend's production path keeps it vocab-parallel */
  pleTable: 'gathered' | 'vocabParallel';
}

/**
 * The prefill cases the engine tests run: SP on and off, tp 2 and 4, FP8, MTP, QSA dropping
 * tokens, the PLE table vocab-parallel (every node on the device: the run is recorded) and
 * gathered (its lookup a host op: node by node, staged through the host).
 */
export const ENGINE_CASES: readonly { name: string; options: EngineCaseOptions }[] = [
  { name: 'tiny tp 2 SP on (MTP, PLE)', options: { config: 'tiny', tokens: 64, tp: 2, sp: 'on', pleTable: 'vocabParallel' } },
  { name: 'tiny tp 2 SP off', options: { config: 'tiny', tokens: 64, tp: 2, sp: 'off', pleTable: 'vocabParallel' } },
  {
    name: 'tiny tp 4 SP on, FP8 e4m3fnuz, padding rows (T 70)',
    options: { config: 'tiny', tokens: 70, tp: 4, sp: 'on', fp8: 'e4m3fnuz', pleTable: 'vocabParallel' },
  },
  { name: 'small tp 4 SP on, QSA dropping tokens', options: { config: 'small', tokens: 300, tp: 4, sp: 'on', pleTable: 'vocabParallel' } },
  { name: 'tiny tp 2 SP on, the PLE table gathered (a host op)', options: { config: 'tiny', tokens: 64, tp: 2, sp: 'on', pleTable: 'gathered' } },
];

export function prefillOf(options: EngineCaseOptions) {
  return preparePrefill({ reduce: 'ring', seed: 0, subLayers: MODEL_SUB_LAYERS, env: {}, ...options, config: PRESETS[options.config] });
}

/** the bytes of a tensor, for bitwise comparison */
export function bytesOf(t: Tensor): Buffer {
  return Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength);
}

/** the CPU reference's graph outputs */
export async function referenceOutputs(p: ReturnType<typeof prefillOf>): Promise<Map<string, Tensor>> {
  const cpu = new CpuBackend();
  try {
    return (await runOnce(cpu, p.graph, p.feeds, p.weights)).values;
  } finally {
    await cpu.dispose();
  }
}

/** `runs` runs of one prepared session: each run's outputs and engine stats */
export async function repeatedRuns(
  backend: Backend,
  p: ReturnType<typeof prefillOf>,
  runs: number,
): Promise<{ values: Map<string, Tensor>; engine: EngineStats }[]> {
  const session = await backend.prepare(p.graph, p.weights);
  try {
    const out = [];
    for (let i = 0; i < runs; i++) {
      const r = await session.run(p.feeds);
      out.push({ values: r.values, engine: r.stats.engine! });
    }
    return out;
  } finally {
    await session.dispose();
  }
}
