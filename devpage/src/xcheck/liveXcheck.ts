// The dev page's live xcheck: one prefill (full model, synthetic weights) prepared twice
// with dump: true, each side run on its backend (WebGPU over the browser's device, or the CPU
// reference) and the two compared by name, through core's xcheck (xcheck/xcheckRuns.ts, as
// `hcsp xcheck` does): runNamed reads a side's named values back, xcheckPair compares, as an
// XcheckReport the views draw like a loaded one. Pure compute, no DOM: the page runs a WebGPU
// side in the page and a CPU side in the worker; the tests run both.
import { getConfig, MODEL_SUB_LAYERS, preparePrefill, REDUCE_ALGORITHMS, type Backend, type ReduceAlgorithm } from '@hcsp/core';
import { diffNamed, runNamed, xcheckPair, xcheckRun, type AlignedTensor, type XcheckReport } from '@hcsp/core/xcheck';

export type LiveBackend = 'webgpu' | 'cpu';
/** sp: the same backend, SP on (a) against SP off (b); backends: WebGPU (a) against the CPU reference (b), same SP */
export type LivePair = 'sp' | 'backends';

export const LIVE_CONFIGS = ['tiny', 'small'] as const;
/** the page's own bound (the CPU runs of the run view use the same) */
export const LIVE_MAX_TOKENS = 2048;

export interface LiveRequest {
  config: string;
  tokens: number;
  tp: number;
  seed: number;
  reduce: ReduceAlgorithm;
  pair: LivePair;
  /** pair 'sp': the backend both sides run on */
  backend: LiveBackend;
  /** pair 'backends': the SP mode of both sides */
  sp: 'on' | 'off';
}

/** One side of the comparison: a backend and an SP mode (the reduction is the request's). */
export interface LiveSide {
  backend: LiveBackend;
  sp: 'on' | 'off';
}

/** What one side's run hands back (from the worker too: plain data, structured-clone safe). */
export interface LiveSideResult {
  side: LiveSide;
  /** the backend's own description (WebGPU: host and adapter) */
  device: string;
  sp: boolean;
  chunk: number;
  seconds: number;
  named: [string, AlignedTensor][];
}

export function checkLiveRequest(r: LiveRequest): void {
  if (!(LIVE_CONFIGS as readonly string[]).includes(r.config))
    throw new Error(`live xcheck: config '${r.config}' cannot run in the page (runnable: ${LIVE_CONFIGS.join(', ')})`);
  if (!Number.isSafeInteger(r.tokens) || r.tokens < 1 || r.tokens > LIVE_MAX_TOKENS)
    throw new Error(`live xcheck: tokens T must be an integer in [1, ${LIVE_MAX_TOKENS}], got ${r.tokens}`);
  if (![1, 2, 4, 8].includes(r.tp)) throw new Error(`live xcheck: tp must be 1, 2, 4 or 8, got ${r.tp}`);
  if (!Number.isSafeInteger(r.seed) || r.seed < 0) throw new Error(`live xcheck: seed must be a non-negative integer, got ${r.seed}`);
  if (!REDUCE_ALGORITHMS.includes(r.reduce))
    throw new Error(`live xcheck: reduce must be one of ${REDUCE_ALGORITHMS.join(', ')}, got ${JSON.stringify(r.reduce)}`);
  if (r.pair !== 'sp' && r.pair !== 'backends') throw new Error(`live xcheck: pair must be 'sp' or 'backends', got ${JSON.stringify(r.pair)}`);
  if (r.backend !== 'webgpu' && r.backend !== 'cpu') throw new Error(`live xcheck: backend must be 'webgpu' or 'cpu', got ${JSON.stringify(r.backend)}`);
  if (r.sp !== 'on' && r.sp !== 'off') throw new Error(`live xcheck: sp must be 'on' or 'off', got ${JSON.stringify(r.sp)}`);
}

/** Run a and run b (b is the reference the report compares a against, as the CLI's first SPEC). */
export function liveSides(r: LiveRequest): { a: LiveSide; b: LiveSide } {
  if (r.pair === 'sp') return { a: { backend: r.backend, sp: 'on' }, b: { backend: r.backend, sp: 'off' } };
  return { a: { backend: 'webgpu', sp: r.sp }, b: { backend: 'cpu', sp: r.sp } };
}

/** The side as an xcheck SPEC, e.g. `webgpu:sp=on:reduce=ring`. */
export function sideSpec(side: LiveSide, r: LiveRequest): string {
  return `${side.backend}:sp=${side.sp}:reduce=${r.reduce}`;
}

export type SideProgress = (done: number, total: number) => void;

/** Prepares the prefill with dump: true, runs it on `backend` keeping the named values, and reads them back. */
export async function runLiveSide(backend: Backend, r: LiveRequest, side: LiveSide, onProgress: SideProgress = () => {}): Promise<LiveSideResult> {
  checkLiveRequest(r);
  const config = getConfig(r.config);
  const p = preparePrefill({ config, tokens: r.tokens, tp: r.tp, sp: side.sp, reduce: r.reduce, seed: r.seed, subLayers: MODEL_SUB_LAYERS, dump: true });
  const { named, device, seconds } = await runNamed(backend, p, { onNode: onProgress });
  return { side, device, sp: p.plan.sp, chunk: p.plan.chunk, seconds, named: [...named] };
}

/** The two sides compared by name, as the report `hcsp xcheck --json` would print for them (no float64 evaluation). */
export function liveReport(r: LiveRequest, a: LiveSideResult, b: LiveSideResult): XcheckReport {
  const config = getConfig(r.config);
  const exitLayer = config.numLayers;
  const na = new Map(a.named);
  const nb = new Map(b.named);
  const { tensors } = diffNamed(na, nb, exitLayer);
  const run = (s: LiveSideResult) =>
    xcheckRun({ spec: sideSpec(s.side, r), backend: s.side.backend, options: { sp: s.side.sp, reduce: r.reduce }, reduce: r.reduce }, s, s.device, s.seconds);
  const runB = run(b);
  const runA = run(a);
  return {
    ok: true,
    config: r.config,
    tokens: r.tokens,
    tp: r.tp,
    seed: r.seed,
    layers: [0, exitLayer],
    weights: 'synthetic',
    maxUlpGate: null,
    exact: false,
    runs: [runB, runA],
    pairs: [xcheckPair(runA.spec, runB.spec, tensors, na, nb)],
    golden: null,
  };
}
