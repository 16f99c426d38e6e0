// `hcsp model`: what sequence parallelism buys on a described device, from the cost model
// (core/src/costModel): the decoder graph the project builds, priced per rank with SP off
// and on, the HC share, the predicted input-throughput gain, the calibration, and a sweep.
import type { Command } from 'commander';
import {
  ALL_PHYSICS_TERMS,
  builtInDevice,
  BUILT_IN_DEVICES,
  calibration,
  type Calibration,
  type Device,
  type Efficiency,
  efficiencyFor,
  forecast,
  type Forecast,
  OP_CLASS_TITLES,
  COST_FAMILIES,
  parseDevice,
  PHYSICS_TERMS,
  type PhysicsTerm,
  type SideCost,
  sweep,
  SWEEP_ISL,
  SWEEP_TP,
  type SweepRow,
} from '@hcsp/core/cost-model';
import { JSON_LIMITS, JsonInputError, readJsonInput, resolveModelConfig } from '@hcsp/core/node';
import { deviceFit, type DeviceFit } from '../costModel/deviceFit.ts';
import { gainRange, type GainRange } from '../costModel/gainRange.ts';
import { formatBytes } from '../guards/byteSize.ts';
import { oneOf, parseIntStrict } from '../parseArgs.ts';

export interface ModelOptions {
  device: string;
  tp: string;
  isl: string;
  concurrency: string;
  mtp: boolean;
  sweep: boolean;
  json: boolean;
  config: string;
  mtpDrafter: string;
  qsaSelection: string;
  /** roofline (default) or hcsp */
  engine?: string;
  /** with --engine hcsp: fast (default) or exact */
  kernels?: string;
}

/** A built-in device by name, or a device description file (JSON) by path. */
export function resolveDevice(spec: string): Device {
  if (BUILT_IN_DEVICES.includes(spec)) return builtInDevice(spec);
  if (!/\.json$/i.test(spec) && !spec.includes('/')) {
    throw new Error(`--device: unknown device '${spec}': built-in devices are ${BUILT_IN_DEVICES.join(', ')}, or pass a device description FILE.json`);
  }
  let json: unknown;
  try {
    json = readJsonInput(spec, JSON_LIMITS.device);
  } catch (err) {
    throw err instanceof JsonInputError ? new Error(`--device ${err.message}`) : err;
  }
  return parseDevice(json, spec);
}

export interface ModelReport {
  device: { name: string; description: string; origin: string; topology: string; figures: Device['figures'] };
  efficiency: Efficiency & { from: 'device file' | 'calibration' };
  calibration: Calibration;
  forecast?: ReturnType<typeof forecastJson> & { gainRange: GainRange; fit: { off: DeviceFit; on: DeviceFit }; terms: TermEffect[] };
  /** each cell with whether one forward's activations and weights fit the device (rank 0, SP off and on) */
  sweep?: (SweepRow & { fit: { off: DeviceFit; on: DeviceFit } })[];
}

/** What one physics term moves: the gain with every term and with all but this one (each calibrated anew). */
export interface TermEffect {
  term: PhysicsTerm;
  description: string;
  gainWithout: number;
  /** gain with all terms - gain without this one */
  contribution: number;
}

/** the device's memory in bytes (memoryGB as 1e9 bytes: the smaller reading of a data sheet's GB) */
const memoryBytes = (device: Device) => device.figures.memoryGB.value * 1e9;

function sideJson(s: SideCost) {
  return {
    sp: s.sp,
    reason: s.plan.reason,
    chunk: s.plan.chunk,
    spStartLayer: s.plan.spStartLayer,
    seconds: s.seconds,
    tokensPerSecond: s.tokensPerSecond,
    hcShare: s.hcShare,
    byClass: s.byClass,
    layers: s.priced.layers,
  };
}

function forecastJson(f: Forecast) {
  return { input: f.input, gain: f.gain, auto: f.auto, off: sideJson(f.off), on: sideJson(f.on) };
}

/** Computes the whole answer of the command (printed once by the action). */
export function modelReport(opts: ModelOptions): ModelReport {
  const config = resolveModelConfig(opts.config);
  const device = resolveDevice(opts.device);
  const concurrency = parseIntStrict(opts.concurrency, '--concurrency', { min: 1 });
  const mtpDrafter = oneOf(opts.mtpDrafter, ['gathered', 'sharded'] as const, '--mtp-drafter');
  const qsa = oneOf(opts.qsaSelection, ['replicated', 'row-sharded'] as const, '--qsa-selection');
  const variant = { mtpDrafter, qsaSelection: qsa === 'row-sharded' ? ('rowSharded' as const) : ('replicated' as const) };
  const engine = oneOf(opts.engine ?? 'roofline', ['roofline', 'hcsp'] as const, '--engine');
  const kernels = oneOf(opts.kernels ?? 'fast', ['fast', 'exact'] as const, '--kernels');
  const cal = calibration(config);
  const efficiency = efficiencyFor({ device, config });
  const base = {
    device: { name: device.name, description: device.description, origin: device.origin, topology: device.topology, figures: device.figures },
    efficiency: { ...efficiency, from: device.efficiency ? ('device file' as const) : ('calibration' as const) },
    calibration: cal,
  };
  const input = { config, device, concurrency, mtp: opts.mtp, efficiency, env: process.env, ...variant, engine, ...(engine === 'hcsp' ? { kernels } : {}) };
  const hcspKernels = engine === 'hcsp' ? kernels : undefined;
  const fit = (tokens: number, tp: number) => ({
    off: deviceFit(config, tokens, tp, 'off', opts.mtp, memoryBytes(device), variant, hcspKernels),
    on: deviceFit(config, tokens, tp, 'on', opts.mtp, memoryBytes(device), variant, hcspKernels),
  });
  if (opts.sweep) return { ...base, sweep: sweep(input, SWEEP_TP, SWEEP_ISL).map((row) => ({ ...row, fit: fit(row.tokens, row.tp) })) };
  const tp = parseIntStrict(opts.tp, '--tp', { min: 1 });
  const isl = parseIntStrict(opts.isl, '--isl', { min: 1 });
  const f = forecast({ ...input, tp, isl });
  const terms = ALL_PHYSICS_TERMS.map((term): TermEffect => {
    const rest = ALL_PHYSICS_TERMS.filter((t) => t !== term);
    const eff = device.efficiency ?? calibration(config, rest).efficiency;
    const gainWithout = forecast({ ...input, tp, isl, terms: rest, efficiency: eff }).gain;
    return { term, description: PHYSICS_TERMS[term], gainWithout, contribution: f.gain - gainWithout };
  });
  return { ...base, forecast: { ...forecastJson(f), gainRange: gainRange({ ...input, tp, isl }, efficiency), fit: fit(f.input.tokens, tp), terms } };
}

const ms = (s: number) => (s * 1e3).toFixed(1);
const pct = (x: number) => `${(x * 100).toFixed(1)}%`;

function table(rows: string[][]): string[] {
  const widths = rows[0].map((_, c) => Math.max(...rows.map((r) => r[c].length)));
  return rows.map((r) => r.map((v, c) => (c === 0 ? v.padEnd(widths[c]) : v.padStart(widths[c]))).join('  '));
}

function deviceLines(r: ModelReport): string[] {
  const lines = [`device ${r.device.name} (${r.device.origin}, ${r.device.topology} links): ${r.device.description}`];
  for (const [key, f] of Object.entries(r.device.figures)) {
    if (!f) continue;
    lines.push(`  ${key} ${f.value}${f.published ? '' : f.range ? ` (not published; range ${f.range[0]}-${f.range[1]})` : ' (not published)'}`);
  }
  lines.push("  (every figure's source: --json, device.figures.*.source)");
  return lines;
}

function calibrationLines(r: ModelReport): string[] {
  const c = r.calibration;
  return [
    'calibration:',
    `  fact: ${c.fact.text}`,
    `  ${c.method}`,
    `  in force: eta_hc ${r.efficiency.hc.toFixed(3)}, eta_other ${r.efficiency.other} (from the ${r.efficiency.from}); HC share at the fact's point: ${pct(c.shareAtPeak)} at peak, ${pct(c.shareFitted)} fitted`,
  ];
}

function fitText(f: DeviceFit, side: string): string {
  return `${side} ${formatBytes(f.activationBytes)} activations${f.scratchBytes > 0 ? ` + ${formatBytes(f.scratchBytes)} kernel scratch` : ''} + ${formatBytes(f.weightBytes)} weights${f.fits ? '' : ' (does not fit)'}`;
}

function sweepFit(fit: { off: DeviceFit; on: DeviceFit }): string {
  const total = (f: DeviceFit) => formatBytes(f.activationBytes + f.scratchBytes + f.weightBytes);
  const sides = fit.off.fits === fit.on.fits ? (fit.on.fits ? '' : ' does not fit') : fit.on.fits ? ' SP off does not fit' : ' SP on does not fit';
  return `${total(fit.off)} / ${total(fit.on)}${sides}`;
}

/** the per-layer costs grouped by layer kind, and apart from them the layers SP on leaves unsharded, embed, exit and mtp */
function layerGroups(f: NonNullable<ModelReport['forecast']>): string[][] {
  const groups = new Map<string, { labels: string[]; off: number; on: number; offHc: number; onHc: number }>();
  const start = f.on.spStartLayer;
  f.off.layers.forEach((l, k) => {
    const on = f.on.layers.find((x) => x.label === l.label) ?? f.on.layers[k];
    const key = l.kind === null ? l.label : `${l.kind}${start === null ? '' : l.layer < start ? ' (unsharded)' : ' (sharded)'}`;
    const g = groups.get(key) ?? { labels: [], off: 0, on: 0, offHc: 0, onHc: 0 };
    g.labels.push(l.label);
    g.off += l.seconds;
    g.on += on.seconds;
    g.offHc += l.byClass.hc;
    g.onHc += on.byClass.hc;
    groups.set(key, g);
  });
  const rows = [['kind', 'layers', 'count', 'off ms', 'on ms', 'on/off', 'off HC', 'on HC']];
  for (const [kind, g] of groups) {
    const labels = g.labels.length > 4 ? `${g.labels.slice(0, 3).join(', ')}, ... ${g.labels.at(-1)}` : g.labels.join(', ');
    rows.push([kind, labels, String(g.labels.length), ms(g.off), ms(g.on), g.off > 0 ? (g.on / g.off).toFixed(3) : '-', ms(g.offHc), ms(g.onHc)]);
  }
  return rows;
}

export function formatModel(r: ModelReport): string {
  const out: string[] = [];
  if (r.forecast) {
    const f = r.forecast;
    const i = f.input;
    out.push(
      `engine ${i.engine}${i.engine === 'hcsp' ? ` (kernels ${i.kernels}: this project's GPU path, one sequence of the forward's rows)` : ' (an ATOM-class production path)'}`,
    );
    out.push(
      `config ${i.config}, tp ${i.tp}, ISL ${i.isl} x concurrency ${i.concurrency} = ${i.tokens} tokens per forward, MTP ${i.mtp ? 'on' : 'off'}${i.mtp ? ` (drafter ${i.mtpDrafter})` : ''}, QSA selection ${i.qsaSelection}`,
    );
    out.push(
      `SP on: streams sharded from layer ${f.on.spStartLayer}, ${f.on.chunk} rows per rank; production gate (auto): ${f.auto.sp ? 'on' : `off (${f.auto.reason})`}`,
    );
    out.push('');
    const rows = [['per rank, one forward', 'SP off ms', 'SP on ms', 'on/off']];
    for (const c of COST_FAMILIES)
      rows.push([
        OP_CLASS_TITLES[c],
        ms(f.off.byClass[c].seconds),
        ms(f.on.byClass[c].seconds),
        f.off.byClass[c].seconds > 0 ? (f.on.byClass[c].seconds / f.off.byClass[c].seconds).toFixed(3) : '-',
      ]);
    rows.push(['total', ms(f.off.seconds), ms(f.on.seconds), (f.on.seconds / f.off.seconds).toFixed(3)]);
    rows.push(['HC share', pct(f.off.hcShare), pct(f.on.hcShare), '']);
    rows.push(['input tokens/s (TP group)', f.off.tokensPerSecond.toFixed(0), f.on.tokensPerSecond.toFixed(0), '']);
    out.push(...table(rows));
    out.push('');
    const g = f.gainRange;
    out.push(
      `predicted input-throughput gain (tokens/s SP on / SP off): ${f.gain.toFixed(3)}x${g.figures.length > 0 ? `, ${g.low.toFixed(3)}x-${g.high.toFixed(3)}x over the ranges of the device's figures (${g.figures.join(', ')})` : " (the device's figures carry no ranges)"}`,
    );
    out.push(
      `terms beyond the roofline (gain with all, without the term, each calibrated anew): ${f.terms.map((t) => `${t.term} ${t.contribution >= 0 ? '+' : ''}${(t.contribution * 100).toFixed(2)} pts`).join(', ')}`,
    );
    out.push(
      `memory of rank 0: ${fitText(f.fit.off, 'SP off')}; ${fitText(f.fit.on, 'SP on')}; the device holds ${r.device.figures.memoryGB.value} GB (${formatBytes(r.device.figures.memoryGB.value * 1e9)})`,
    );
    out.push('');
    out.push("per layer kind (per rank; ms summed over the group's layers):");
    out.push(...table(layerGroups(f)).map((s) => `  ${s}`));
  }
  if (r.sweep) {
    const rows = [['tp', 'ISL', 'tokens', 'SP off ms', 'SP on ms', 'HC off', 'HC on', 'gain', 'auto', 'rank 0 memory (off / on)']];
    for (const s of r.sweep) {
      rows.push([
        String(s.tp),
        String(s.isl),
        String(s.tokens),
        ms(s.offSeconds),
        ms(s.onSeconds),
        pct(s.hcShareOff),
        pct(s.hcShareOn),
        `${s.gain.toFixed(3)}x`,
        s.auto ? 'on' : 'off',
        sweepFit(s.fit),
      ]);
    }
    out.push(
      `sweep (per rank, one forward of ISL x concurrency tokens; memory: activations at the engine's peak plus weights, against the device's ${r.device.figures.memoryGB.value} GB, ${formatBytes(r.device.figures.memoryGB.value * 1e9)}):`,
    );
    out.push(...table(rows).map((s) => `  ${s}`));
  }
  out.push('');
  out.push(...calibrationLines(r));
  out.push('');
  out.push(...deviceLines(r));
  out.push('');
  out.push(
    "model: per kernel max(FLOPs / rate, memory latency + fewest bytes / HBM bandwidth) / efficiency + launch overhead, library GEMMs with wave quantization over the CUs, tile padding and the library's measured fraction of peak; collectives: latency + bus bytes / usable link bandwidth; MoE with balanced routing; attention per request (roofline engine); no overlap of kernels or of compute with communication. --engine hcsp: each declared kernel (core costModel/engines/hcspKernels.ts) at the slowest of the roofline, its FLOPs at the rate its threads can issue, its bytes and its serial chain, plus launches and host syncs.",
  );
  return `${out.join('\n')}\n`;
}

export function registerModel(program: Command): void {
  program
    .command('model')
    .description('cost model: per-rank time per layer and op class with SP off and on, the HC share and the predicted throughput gain on a described device')
    .option('--device <name|FILE.json>', `a built-in device (${BUILT_IN_DEVICES.join(', ')}) or a device description file with measured figures`, 'mi308x')
    .option('--tp <N>', 'tensor-parallel size', '4')
    .option('--isl <T>', 'tokens per request (input sequence length)', '4096')
    .option('--concurrency <C>', 'requests prefilled together in one forward', '32')
    .option('--mtp', 'the graph with the MTP head', false)
    .option('--sweep', `sweep tp ${SWEEP_TP.join(', ')} x ISL ${SWEEP_ISL.join(', ')} (at --concurrency)`, false)
    .option('--mtp-drafter <where>', "the MTP drafter's HC work under SP: gathered (the SP change) or sharded (the follow-up)", 'gathered')
    .option('--qsa-selection <how>', 'the QSA indexer under SP: replicated (as ATOM) or row-sharded (the follow-up)', 'replicated')
    .option('--engine <name>', "roofline (an ATOM-class production path) or hcsp (this project's GPU kernels as built)", 'roofline')
    .option('--kernels <mode>', 'with --engine hcsp: fast (the production algorithms) or exact (the reference-order kernels)', 'fast')
    .option('--json', 'print one JSON object (every device figure with its source)', false)
    .option('--config <name>', 'model configuration (a preset or a Hugging Face config.json)', 'flash-next')
    .action((opts: ModelOptions) => {
      const r = modelReport(opts);
      process.stdout.write(opts.json ? `${JSON.stringify(r)}\n` : formatModel(r));
    });
}
