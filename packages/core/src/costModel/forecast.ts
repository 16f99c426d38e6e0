// What sequence parallelism buys on a described device: the decoder graph the project builds
// (model/decoderGraph.ts with the real sub-layers, the SP plan of sp/plan.ts) priced per
// rank with SP off and on, the HC share, the predicted input-throughput gain, the one-fact
// calibration and the sweep.
//
// Concurrency: a prefill of `concurrency` requests of `isl` tokens each is ONE forward of
// T = isl * concurrency rows (production batches them so): the graph is built and priced at
// T rows, so every token-parallel op (HC, GEMMs, MoE, GDN, collectives) has the batch's
// shapes, each weight is read once per forward and each kernel launched once. Causal
// attention and the QSA selection are priced per request (each request attends only to its
// own isl tokens, from an empty cache), times concurrency: pricing/attentionCost.ts.
//
// No weights are generated: the graph is built with buildDecoderGraph directly (not
// preparePrefill, which also makes token ids, RoPE feeds and a weight source).
import { RING_DEFAULT_CHANNELS, RING_DEFAULT_CHUNK_ELEMS } from '../collectives/ringAllReduce.ts';
import type { ModelConfig } from '../config/modelConfig.ts';
import type { Graph } from '../graph/graph.ts';
import { MODEL_SUB_LAYERS } from '../layers/modelSubLayers.ts';
import { buildDecoderGraph } from '../model/decoderGraph.ts';
import { planForMode, type SpMode } from '../model/prefill.ts';
import type { SpPlan } from '../sp/plan.ts';
import type { CostFamily } from '../graph/ops/opDef.ts';
import { type ClassTotals, type EngineOptions, type PricedGraph, priceGraph } from './costModel.ts';
import { builtInDevice, type Device, type Efficiency } from './device.ts';
import type { PhysicsTerm } from './physics.ts';

export interface ForecastInput extends EngineOptions {
  config: ModelConfig;
  device: Device;
  tp: number;
  /** tokens per request (input sequence length) */
  isl: number;
  /** requests prefilled together */
  concurrency: number;
  /** the graph with the MTP head */
  mtp: boolean;
  /** efficiency factors; default: the device file's, else the calibration's */
  efficiency?: Efficiency;
  /** where ATOM_QWEN4_EXP_SP_MIN_TOKENS is read for the 'auto' decision (default: unset) */
  env?: Record<string, string | undefined>;
  /** DecoderGraphOptions.mtpDrafter: the MTP drafter's HC work on the gathered state (default, as the SP change) or on row shards (the follow-up) */
  mtpDrafter?: 'gathered' | 'sharded';
  /** DecoderGraphOptions.qsaSelection: the QSA indexer replicated (default) or row-sharded under SP (the follow-up) */
  qsaSelection?: 'replicated' | 'rowSharded';
}

/** The graph variants a forecast may ask for (the production follow-ups of the SP change). */
export interface GraphVariant {
  mtpDrafter?: 'gathered' | 'sharded';
  qsaSelection?: 'replicated' | 'rowSharded';
}

/** One side (SP off or on) of a forecast, for one rank. */
export interface SideCost {
  sp: boolean;
  plan: SpPlan;
  seconds: number;
  /** input tokens per second of the whole TP group (one forward of T tokens) */
  tokensPerSecond: number;
  /** HC seconds / all seconds */
  hcShare: number;
  byClass: Record<CostFamily, ClassTotals>;
  priced: PricedGraph;
}

export interface Forecast {
  input: {
    device: string;
    tp: number;
    isl: number;
    concurrency: number;
    tokens: number;
    mtp: boolean;
    config: string;
    mtpDrafter: 'gathered' | 'sharded';
    qsaSelection: 'replicated' | 'rowSharded';
    engine: 'roofline' | 'hcsp';
    kernels: 'exact' | 'fast' | null;
  };
  efficiency: Efficiency;
  off: SideCost;
  on: SideCost;
  /** tokens/s SP on / SP off */
  gain: number;
  /** what the production gate (sp 'auto') decides for this forward */
  auto: { sp: boolean; reason: string | null };
}

export function buildCostGraph(
  config: ModelConfig,
  tokens: number,
  tp: number,
  sp: SpMode,
  mtp: boolean,
  env: Record<string, string | undefined> = {},
  variant: GraphVariant = {},
): { plan: SpPlan; graph: Graph } {
  const plan = planForMode(config, tokens, tp, sp, env, mtp);
  const { graph } = buildDecoderGraph({
    config,
    plan,
    reduce: 'ring',
    ring: { channels: RING_DEFAULT_CHANNELS, chunkElems: RING_DEFAULT_CHUNK_ELEMS },
    contract: 'atom',
    subLayers: MODEL_SUB_LAYERS,
    ...(variant.mtpDrafter ? { mtpDrafter: variant.mtpDrafter } : {}),
    ...(variant.qsaSelection ? { qsaSelection: variant.qsaSelection } : {}),
  });
  return { plan, graph };
}

function checkInput(i: ForecastInput): number {
  for (const [name, v] of [
    ['tp', i.tp],
    ['isl', i.isl],
    ['concurrency', i.concurrency],
  ] as const) {
    if (!Number.isSafeInteger(v) || v < 1) throw new Error(`cost model: ${name} must be a positive integer, got ${v}`);
  }
  const tokens = i.isl * i.concurrency;
  if (!Number.isSafeInteger(tokens)) throw new Error(`cost model: isl x concurrency = ${tokens} rows is too many`);
  return tokens;
}

/** The engine options of a forecast input (absent: the defaults). */
export function engineOptions(i: EngineOptions): EngineOptions {
  return { ...(i.engine ? { engine: i.engine } : {}), ...(i.kernels ? { kernels: i.kernels } : {}), ...(i.terms ? { terms: i.terms } : {}) };
}

/** Prices one side: the plan of `sp` ('off' or 'on'), rank 0. */
export function priceSide(i: ForecastInput, sp: 'off' | 'on', efficiency: Efficiency): SideCost {
  const tokens = checkInput(i);
  const { plan, graph } = buildCostGraph(i.config, tokens, i.tp, sp, i.mtp, i.env, { mtpDrafter: i.mtpDrafter, qsaSelection: i.qsaSelection });
  const priced = priceGraph(graph, { config: i.config, device: i.device, efficiency, requests: i.concurrency, requestTokens: i.isl, ...engineOptions(i) });
  return {
    sp: plan.sp,
    plan,
    seconds: priced.seconds,
    tokensPerSecond: tokens / priced.seconds,
    hcShare: priced.byClass.hc.seconds / priced.seconds,
    byClass: priced.byClass,
    priced,
  };
}

/** The efficiency factors in force: given, else the device file's, else the calibration's. */
export function efficiencyFor(i: Pick<ForecastInput, 'efficiency' | 'device' | 'config' | 'terms'>): Efficiency {
  return i.efficiency ?? i.device.efficiency ?? calibration(i.config, i.terms).efficiency;
}

/** SP off vs SP on for one forward. */
export function forecast(i: ForecastInput): Forecast {
  const tokens = checkInput(i);
  const efficiency = efficiencyFor(i);
  const off = priceSide(i, 'off', efficiency);
  const on = priceSide(i, 'on', efficiency);
  const auto = planForMode(i.config, tokens, i.tp, 'auto', i.env ?? {}, i.mtp);
  return {
    input: {
      device: i.device.name,
      tp: i.tp,
      isl: i.isl,
      concurrency: i.concurrency,
      tokens,
      mtp: i.mtp,
      config: i.config.name,
      mtpDrafter: i.mtpDrafter ?? 'gathered',
      qsaSelection: i.qsaSelection ?? 'replicated',
      engine: i.engine ?? 'roofline',
      kernels: i.engine === 'hcsp' ? (i.kernels ?? 'fast') : null,
    },
    efficiency,
    off,
    on,
    gain: on.tokensPerSecond / off.tokensPerSecond,
    auto: { sp: auto.sp, reason: auto.reason },
  };
}

// ---- calibration -------------------------------------------------------------------------

/** The one fact allowed: a TP4 prefill profile of the production deployment (MI308X). */
export const CALIBRATION_FACT = {
  device: 'mi308x',
  tp: 4,
  isl: 4096,
  concurrency: 32,
  mtp: true,
  sp: 'off' as const,
  hcShare: 0.3,
  text: 'on a TP4 prefill profile (ISL 4096 x concurrency 32, MTP on) of the production deployment (MI308X), the HC kernels took about 30% of GPU time (SP off)',
};

export interface Calibration {
  fact: typeof CALIBRATION_FACT;
  efficiency: Efficiency;
  /** the HC share the model gives at peak (both factors 1) */
  shareAtPeak: number;
  /** the HC share with the fitted factor (reproduces the fact) */
  shareFitted: number;
  method: string;
}

const calibrations = new Map<string, Calibration>();

/**
 * Fits the model's one free factor to the fact. Factors: `hc`, the achieved fraction of the
 * roofline for the HC kernels (fitted), and `other`, the same for every other compute kernel
 * (fixed at 1: the other kernels are priced at peak, so `hc` is the HC kernels' efficiency
 * RELATIVE to the rest, and absolute times are roofline lower bounds). With per-node time
 * roofline/eta + launches, HC(eta) = A/eta + Lh and the share s = HC / (HC + R) solve in closed
 * form: eta = A (1 - s) / (s (R + Lh) - Lh), where A is the HC kernels' roofline time, Lh their
 * launch time and R everything else on the rank at the fact's point (SP off).
 */
export function calibration(config: ModelConfig, terms?: readonly PhysicsTerm[]): Calibration {
  const key = `${config.name}/${terms ? [...terms].sort().join(',') : 'all'}`;
  const cached = calibrations.get(key);
  if (cached) return cached;
  const f = CALIBRATION_FACT;
  const device = builtInDevice(f.device);
  const peak: Efficiency = { hc: 1, other: 1 };
  const at = { config, device, tp: f.tp, isl: f.isl, concurrency: f.concurrency, mtp: f.mtp, ...(terms ? { terms } : {}) };
  const side = priceSide(at, f.sp, peak);
  const launch = device.figures.kernelLaunchUs.value * 1e-6;
  let A = 0;
  let Lh = 0;
  for (const n of side.priced.nodes) {
    if (n.cls !== 'hc') continue;
    Lh += n.kernels * launch;
    A += n.seconds - n.kernels * launch;
  }
  const R = side.seconds - A - Lh;
  const s = f.hcShare;
  const denom = s * (R + Lh) - Lh;
  if (!(denom > 0)) throw new Error(`calibration: launches alone exceed the ${s * 100}% HC share`);
  const hc = (A * (1 - s)) / denom;
  const efficiency: Efficiency = { hc, other: 1 };
  const fitted = priceSide(at, f.sp, efficiency);
  const c: Calibration = {
    fact: f,
    efficiency,
    shareAtPeak: side.hcShare,
    shareFitted: fitted.hcShare,
    method:
      `one fitted factor: eta_hc, the achieved fraction of the roofline for the HC kernels, relative to every other kernel priced at its roofline (eta_other = 1 fixed). ` +
      `At the fact's point (MI308X built-in figures, tp ${f.tp}, ${f.isl} x ${f.concurrency}, MTP on, SP off) the model at peak gives an HC share of ${(side.hcShare * 100).toFixed(1)}%; ` +
      `solving HC(eta)/(HC(eta) + rest) = ${s} in closed form gives eta_hc = ${hc.toFixed(3)}${Math.abs(hc - 1) < 0.05 ? ' (about 1: the roofline alone reproduces the fact; the HC kernels ran about as close to their roofline as the rest did)' : hc > 1 ? ' (> 1: the rest, priced at its roofline, must have run further below it than HC did)' : ' (< 1: the HC kernels ran further below their roofline than the rest)'}. ` +
      `The same factors are used for every device unless its file carries its own.`,
  };
  calibrations.set(key, c);
  return c;
}

// ---- sweep -------------------------------------------------------------------------------

export const SWEEP_TP = [2, 4, 8] as const;
export const SWEEP_ISL = [1024, 4096, 16384, 65536, 131072] as const;

export interface SweepRow {
  tp: number;
  isl: number;
  tokens: number;
  offSeconds: number;
  onSeconds: number;
  hcShareOff: number;
  hcShareOn: number;
  gain: number;
  auto: boolean;
}

export function sweep(i: Omit<ForecastInput, 'tp' | 'isl'>, tps: readonly number[] = SWEEP_TP, isls: readonly number[] = SWEEP_ISL): SweepRow[] {
  const rows: SweepRow[] = [];
  for (const tp of tps) {
    for (const isl of isls) {
      const f = forecast({ ...i, tp, isl });
      rows.push({
        tp,
        isl,
        tokens: f.input.tokens,
        offSeconds: f.off.seconds,
        onSeconds: f.on.seconds,
        hcShareOff: f.off.hcShare,
        hcShareOn: f.on.hcShare,
        gain: f.gain,
        auto: f.auto.sp,
      });
    }
  }
  return rows;
}
