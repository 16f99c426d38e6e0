// `hcsp plan`: the sequence-parallel plan of one forward (gate decision, shards, padding,
// quantization path, exit gather), as JSON or a short summary.
import type { Command } from 'commander';
import { readSpFloor } from '@hcsp/core';
import { resolveModelConfig } from '@hcsp/core/node';
import type { SpFloor, SpPlan } from '@hcsp/core';
import { configOption, SP_ENV_HELP, tpOption } from '../defaults.ts';
import { parseIntStrict, parseLayerRange } from '../parseArgs.ts';
import { planWithFloor } from '../sp/planWithFloor.ts';

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
  const config = resolveModelConfig(opts.config);
  const tokens = parseIntStrict(opts.tokens, '--tokens', { min: 1 });
  const tp = parseIntStrict(opts.tp, '--tp', { min: 1 });
  const fromEnv = readSpFloor(env);
  const floor: SpFloor =
    opts.spMinTokens === undefined ? fromEnv : { minTokens: parseIntStrict(opts.spMinTokens, '--sp-min-tokens', { min: 0 }), source: { kind: 'option', name: '--sp-min-tokens' } };
  const layers = opts.layers === undefined ? undefined : parseLayerRange(opts.layers, '--layers');
  return planWithFloor({ config, tokens, tp, minTokens: floor.minTokens, capturing: opts.capturing, layers, mtp: opts.mtp }, floor.source);
}

function table(rows: (string | number)[][]): string {
  const widths = rows[0].map((_, c) => Math.max(...rows.map((r) => String(r[c]).length)));
  return rows.map((r) => r.map((v, c) => String(v).padStart(widths[c])).join('  ')).join('\n');
}

/** A few lines: the decision, the row split, the quant path and exit gather, and a table of shards. */
export function formatPlan(p: SpPlan): string {
  const head = `config ${p.config}, layers ${p.layers[0]}:${p.layers[1]}, T ${p.tokens}, tp ${p.tp}${p.mtp ? ', mtp' : ''}`;
  const lines = [head];
  if (p.sp) {
    lines.push(`sequence parallel: on, streams sharded from layer ${p.spStartLayer}, exit gather: ${p.gather}`);
    lines.push(`chunk ${p.chunk} rows per rank, padded to ${p.paddedTokens} rows (${p.paddedTokens - p.tokens} padding)`);
  } else {
    lines.push(`sequence parallel: off (${p.reason})`);
    lines.push(`every rank holds all ${p.tokens} rows`);
  }
  lines.push(`fp8 input quantization: ${p.quant === 'fused' ? 'fused (hc_gated_mean_quant)' : 'separate (bf16 gated mean, per-token quant)'}`);
  const rows: (string | number)[][] = [['rank', 'start', 'end', 'real', 'pad']];
  for (const s of p.shards) rows.push([s.rank, s.start, s.end, s.realRows, s.padRows]);
  lines.push(table(rows));
  return lines.join('\n') + '\n';
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
      const p = planFromOptions(opts, process.env);
      process.stdout.write(opts.json ? JSON.stringify(p) + '\n' : formatPlan(p));
    });
}
