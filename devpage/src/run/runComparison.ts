// Runs one forward twice on the CPU reference (run a and run b: SP on vs off, or two
// reduction algorithms) and reduces the two runs to what the run view shows. Pure compute,
// no DOM: the page calls it inside a Web Worker, the tests call it directly.
import * as core from '@hcsp/core';
import {
  CpuBackend,
  getConfig,
  preparePrefill,
  REDUCE_ALGORITHMS,
  type ReduceAlgorithm,
  type RunStats,
  type SpPlan,
  type SubLayerBuilders,
  runOnce,
} from '@hcsp/core';
import { stepStreams } from './stepStreams.ts';
import { streamDiff, type RunCapture, type StepDiff } from './streamDiff.ts';
import { stepTraffic, type StepTraffic } from './stepTraffic.ts';

export type SubLayerChoice = 'stand-in' | 'model';

export interface RunSide {
  sp: 'on' | 'off';
  reduce: ReduceAlgorithm;
}

export interface RunRequest {
  config: string;
  tokens: number;
  tp: number;
  seed: number;
  subLayers: SubLayerChoice;
  a: RunSide;
  b: RunSide;
}

export interface RunSideReport {
  side: RunSide;
  plan: SpPlan;
  stats: RunStats;
  traffic: StepTraffic[];
  nodes: number;
}

export interface RunReport {
  request: RunRequest;
  subLayersName: string;
  a: RunSideReport;
  b: RunSideReport;
  diffs: StepDiff[];
}

/** Configs the page may execute; flash-next is plan-only (one forward would take hours on a CPU). */
export const RUNNABLE_CONFIGS = ['tiny', 'small'] as const;
/** A full-model run on small takes about 100 s at T 2048 (both runs, 2 cores): bound T there. */
export const RUN_MAX_TOKENS = 2048;

/**
 * The full model's sub-layers, once the lead exports MODEL_SUB_LAYERS from @hcsp/core;
 * null until then. Looked up by name so the page builds either way.
 */
export function modelSubLayers(): SubLayerBuilders | null {
  const found = (core as Record<string, unknown>).MODEL_SUB_LAYERS;
  return found === undefined ? null : (found as SubLayerBuilders);
}

function subLayersOf(choice: SubLayerChoice): SubLayerBuilders {
  if (choice === 'stand-in') return core.STAND_IN_SUB_LAYERS;
  if (choice === 'model') {
    const model = modelSubLayers();
    if (!model) throw new Error(`sub-layers 'model' are not available: @hcsp/core does not export MODEL_SUB_LAYERS`);
    return model;
  }
  throw new Error(`unknown sub-layers ${JSON.stringify(choice)}; expected 'stand-in' or 'model'`);
}

function checkRequest(r: RunRequest): void {
  if (!(RUNNABLE_CONFIGS as readonly string[]).includes(r.config)) {
    throw new Error(`config '${r.config}' cannot be run in the page (runnable: ${RUNNABLE_CONFIGS.join(', ')}); use the plan view for it`);
  }
  if (!Number.isSafeInteger(r.tokens) || r.tokens < 1 || r.tokens > RUN_MAX_TOKENS) {
    throw new Error(`tokens must be an integer in [1, ${RUN_MAX_TOKENS}] for a run, got ${r.tokens}`);
  }
  if (!Number.isSafeInteger(r.seed)) throw new Error(`seed must be an integer, got ${r.seed}`);
  for (const [name, side] of [
    ['a', r.a],
    ['b', r.b],
  ] as const) {
    if (side.sp !== 'on' && side.sp !== 'off') throw new Error(`run ${name}: sp must be 'on' or 'off', got ${JSON.stringify(side.sp)}`);
    if (!REDUCE_ALGORITHMS.includes(side.reduce)) {
      throw new Error(`run ${name}: reduce must be one of ${REDUCE_ALGORITHMS.join(', ')}, got ${JSON.stringify(side.reduce)}`);
    }
  }
}

export type ProgressFn = (run: 'a' | 'b', done: number, total: number) => void;

/** Runs both sides and compares their streams; `onProgress` is called per graph node. */
export async function runComparison(request: RunRequest, onProgress: ProgressFn = () => {}): Promise<RunReport> {
  checkRequest(request);
  const config = getConfig(request.config);
  const subLayers = subLayersOf(request.subLayers);
  const backend = new CpuBackend();
  const runSide = async (name: 'a' | 'b', side: RunSide): Promise<{ capture: RunCapture; report: RunSideReport }> => {
    const p = preparePrefill({ config, tokens: request.tokens, tp: request.tp, sp: side.sp, reduce: side.reduce, seed: request.seed, subLayers });
    // keep only the compared values: keeping all of them takes the tab past a GiB at T 2048
    const keep = [
      ...stepStreams(p.graph, p.outputs.streamsPerStep).flatMap((st) => st.perRank),
      p.outputs.h,
      ...(p.outputs.mtpState === null ? [] : [p.outputs.mtpState]),
    ];
    const result = await runOnce(backend, p.graph, p.feeds, p.weights, { keep, onNode: (done, total) => onProgress(name, done, total) });
    const capture: RunCapture = {
      plan: p.plan,
      graph: p.graph,
      streamsPerStep: p.outputs.streamsPerStep,
      exits: { h: p.outputs.h, mtpState: p.outputs.mtpState },
      values: result.values,
    };
    return { capture, report: { side, plan: p.plan, stats: result.stats, traffic: stepTraffic(p.graph), nodes: p.graph.nodes.length } };
  };
  const a = await runSide('a', request.a);
  const b = await runSide('b', request.b);
  return { request, subLayersName: subLayers.name, a: a.report, b: b.report, diffs: streamDiff(a.capture, b.capture) };
}
