// `hcsp plan`: the sequence-parallel plan of one forward (gate decision, shards, padding,
// quantization path, exit gather), as JSON or a short summary.
import type { Command } from 'commander';
import { layerList, type ModelConfig, planTraffic, type PlanTraffic, readSpFloor, type SpFloor, type SpPlan } from '@hcsp/core';
import { resolveModelConfig } from '@hcsp/core/node';
import { configOption, SP_ENV_HELP, tpOption } from '../defaults.ts';
import { parseIntStrict, parseLayerRange } from '../parseArgs.ts';
import { formatBytes } from '../guards/byteSize.ts';
import { planWithFloor } from '../sp/planWithFloor.ts';
import { spOnReason } from '../sp/spOnReason.ts';

interface PlanOptions {
  tokens: string;
  tp: string;
  spMinTokens?: string;
  capturing: boolean;
  layers?: string;
  mtp: boolean;
  json: boolean;
  config: string;
}

/**
 * Builds the plan from the command's options. The variable is read from `env` (and must be
 * well-formed) even when --sp-min-tokens overrides it; the reason names whichever set the floor.
 */
export function planFromOptions(opts: PlanOptions, env: Record<string, string | undefined>): SpPlan {
  return planWithInputs(opts, env).plan;
}

function planWithInputs(opts: PlanOptions, env: Record<string, string | undefined>): { plan: SpPlan; config: ModelConfig; floor: SpFloor } {
  const config = resolveModelConfig(opts.config);
  const tokens = parseIntStrict(opts.tokens, '--tokens', { min: 1 });
  const tp = parseIntStrict(opts.tp, '--tp', { min: 1 });
  const fromEnv = readSpFloor(env);
  const floor: SpFloor =
    opts.spMinTokens === undefined
      ? fromEnv
      : { minTokens: parseIntStrict(opts.spMinTokens, '--sp-min-tokens', { min: 0 }), source: { kind: 'option', name: '--sp-min-tokens' } };
  const layers = opts.layers === undefined ? undefined : parseLayerRange(opts.layers, '--layers');
  const input = { config, tokens, tp, capturing: opts.capturing, layers, mtp: opts.mtp };
  return { plan: planWithFloor({ ...input, minTokens: floor.minTokens }, floor.source), config, floor };
}

/** The plan, why it shards (or not), and the collectives of the forward with SP as planned and, when sharded, with SP off. */
export interface PlanReport {
  plan: SpPlan;
  /** the gate's conditions that held (null when not sharded: plan.reason says why) */
  spOnReason: string | null;
  traffic: PlanTraffic;
  /** the same forward unsharded (null when the plan is not sharded) */
  spOffTraffic: PlanTraffic | null;
  /** the config has an MTP head (prefill runs it) but --mtp was not given */
  mtpLeftOut: boolean;
}

export function planReport(opts: PlanOptions, env: Record<string, string | undefined>): PlanReport {
  const { plan, config, floor } = planWithInputs(opts, env);
  const layers = opts.layers === undefined ? undefined : parseLayerRange(opts.layers, '--layers');
  // the same forward with the floor at 0: the gate's "sharding disabled"
  const off = plan.sp
    ? planWithFloor({ config, tokens: plan.tokens, tp: plan.tp, capturing: opts.capturing, layers, mtp: opts.mtp, minTokens: 0 }, floor.source)
    : null;
  return {
    plan,
    spOnReason: spOnReason(plan, floor),
    traffic: planTraffic(config, plan),
    spOffTraffic: off ? planTraffic(config, off) : null,
    mtpLeftOut: config.mtp && !opts.mtp,
  };
}

function table(rows: (string | number)[][]): string {
  const widths = rows[0].map((_, c) => Math.max(...rows.map((r) => String(r[c]).length)));
  return rows.map((r) => r.map((v, c) => String(v).padStart(widths[c])).join('  ')).join('\n');
}

function collectivesTable(r: PlanReport): string[] {
  const { traffic, spOffTraffic, plan } = r;
  if (traffic.collectives.length === 0) return [`collectives: none (tp ${plan.tp})`];
  const rows: (string | number)[][] = [['collective', 'where', 'layers', 'per rank in -> out', 'algorithm', 'count', 'sent per rank', 'total per rank']];
  for (const c of traffic.collectives) {
    rows.push([
      c.op,
      c.where,
      layerList(c.layers),
      `${c.input} -> ${c.output}`,
      c.algorithm ?? '-',
      c.count,
      formatBytes(c.bytesPerRank),
      formatBytes(c.bytesPerRank * c.count),
    ]);
  }
  const total = `one forward: ${formatBytes(traffic.totalBytesPerRank)} sent per rank${r.mtpLeftOut ? ' (without the MTP head, which prefill runs for this config: --mtp adds its collectives)' : ''}`;
  return [
    "collectives of one forward (the graph prefill builds, --reduce ring; bytes each rank sends, nccl-tests' bus accounting):",
    table(rows),
    spOffTraffic ? `${total}; with SP off: ${formatBytes(spOffTraffic.totalBytesPerRank)}` : total,
  ];
}

/** A few lines: the decision and why, the row split, the quant path and exit gather, a table of shards and one of the collectives. */
export function formatPlan(r: PlanReport): string {
  const p = r.plan;
  const head = `config ${p.config}, layers ${p.layers[0]}:${p.layers[1]}, T ${p.tokens}, tp ${p.tp}${p.mtp ? ', mtp' : ''}`;
  const lines = [head];
  if (p.sp) {
    lines.push(`sequence parallel: on, streams sharded from layer ${p.spStartLayer}, exit gather: ${p.gather}`);
    lines.push(`  why: ${r.spOnReason}`);
    lines.push(`chunk ${p.chunk} rows per rank, padded to ${p.paddedTokens} rows (${p.paddedTokens - p.tokens} padding)`);
  } else {
    lines.push(`sequence parallel: off (${p.reason})`);
    lines.push(`every rank holds all ${p.tokens} rows`);
  }
  lines.push(`fp8 input quantization: ${p.quant === 'fused' ? 'fused (hc_gated_mean_quant)' : 'separate (bf16 gated mean, per-token quant)'}`);
  const rows: (string | number)[][] = [['rank', 'start', 'end', 'real', 'pad']];
  for (const s of p.shards) rows.push([s.rank, s.start, s.end, s.realRows, s.padRows]);
  lines.push(table(rows));
  lines.push(...collectivesTable(r));
  return `${lines.join('\n')}\n`;
}

export function registerPlan(program: Command): void {
  program
    .command('plan')
    .description('show the sequence-parallel plan of one forward: gate decision, shards, padding, quant path')
    .requiredOption('--tokens <T>', 'tokens in the forward (positive integer)')
    .addOption(tpOption('<N>'))
    .option('--sp-min-tokens <M>', 'token floor for sharding, 0 disables (default: the variable, see Environment)')
    .option('--capturing', 'the forward is being captured as a graph', false)
    .option('--layers <A:B>', 'decoder layers [A, B) of this pipeline stage (default: all)')
    .option('--mtp', 'the MTP head runs after the forward', false)
    .option('--json', 'print one JSON object', false)
    .addOption(configOption())
    .addHelpText('after', SP_ENV_HELP)
    .action((opts: PlanOptions) => {
      const r = planReport(opts, process.env);
      const json = {
        ...r.plan,
        spOnReason: r.spOnReason,
        collectives: r.traffic.collectives,
        commBytesPerRank: r.traffic.totalBytesPerRank,
        spOffCommBytesPerRank: r.spOffTraffic?.totalBytesPerRank ?? null,
      };
      process.stdout.write(opts.json ? `${JSON.stringify(json)}\n` : formatPlan(r));
    });
}
