// `hcsp prefill`: a prefill of T seeded tokens through the decoder stack on tp simulated
// ranks, on the chosen backend, with the SP plan applied (or forced on/off for testing).
import { createHash } from 'node:crypto';
import { resolve } from 'node:path';
import { Option, type Command } from 'commander';
import {
  CpuBackend,
  getConfig,
  MODEL_SUB_LAYERS,
  modelWeightSpecs,
  preparePrefill,
  readSpFloor,
  REDUCE_ALGORITHMS,
  runOnce,
  STAND_IN_SUB_LAYERS,
  validateTp,
  type ReduceAlgorithm,
  type RunResult,
  type SpMode,
  type Tensor,
} from '@hcsp/core';
import { SafetensorsWeightSource } from '@hcsp/core/node';
import { backendNames, createBackend, findBackend } from '@hcsp/backends';
import { checkCheckpoint } from '../checkpoint/weightProblems.ts';
import { describeNonFinite, NonFiniteWatch } from '../checkpoint/nonFinite.ts';
import { CONFIG_HELP, DEFAULT_CONFIG, DEFAULT_TP, SP_ENV_HELP, TP_HELP } from '../defaults.ts';
import { checkMemory, MAX_MEMORY_HELP, memoryLimit } from '../guards/memoryGuard.ts';
import { estimatePrefillMemory } from '../guards/prefillMemory.ts';
import { parseIntStrict } from '../parseArgs.ts';
import { nodeProgress } from '../progress.ts';
import { interruptible } from '../signals.ts';
import { planWithFloor, SP_OFF_REASON } from '../sp/planWithFloor.ts';

interface PrefillCliOptions {
  backend: string;
  config: string;
  tp: string;
  tokens: string;
  sp: string;
  reduce: string;
  seed: string;
  weights?: string;
  stack: string;
  json?: boolean;
  maxMemory?: string;
  quiet?: boolean;
  rejectNonfinite?: boolean;
}

function sha256(t: Tensor): string {
  return createHash('sha256').update(new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength)).digest('hex');
}

function oneOf<T extends string>(v: string, allowed: readonly T[], name: string): T {
  if ((allowed as readonly string[]).includes(v)) return v as T;
  throw new Error(`${name} must be one of ${allowed.join('|')}, got '${v}'`);
}

export async function runPrefillCommand(opts: PrefillCliOptions): Promise<string> {
  const backendName = findBackend(opts.backend).name;
  const config = getConfig(opts.config);
  const tp = parseIntStrict(opts.tp, '--tp', { min: 1 });
  const tokens = parseIntStrict(opts.tokens, '--tokens', { min: 1 });
  const seed = parseIntStrict(opts.seed, '--seed', { min: 0 });
  const sp = oneOf<SpMode>(opts.sp, ['auto', 'on', 'off'], '--sp');
  const reduce = oneOf<ReduceAlgorithm>(opts.reduce, REDUCE_ALGORITHMS, '--reduce');
  const stack = oneOf(opts.stack, ['model', 'hc-only'] as const, '--stack');
  validateTp(config, tp);
  // Read in every --sp mode: a malformed variable is an error even where it has no effect.
  const floor = readSpFloor(process.env);
  const limit = memoryLimit(opts.maxMemory);
  const subLayers = stack === 'model' ? MODEL_SUB_LAYERS : STAND_IN_SUB_LAYERS;
  let checkpoint: SafetensorsWeightSource | undefined;
  let watch: NonFiniteWatch | undefined;
  try {
    if (opts.weights) {
      checkpoint = SafetensorsWeightSource.open(opts.weights);
      checkCheckpoint(checkpoint, modelWeightSpecs(config, subLayers), opts.weights, `config '${config.name}' (${stack} stack)`);
      watch = new NonFiniteWatch(checkpoint, opts.weights, opts.rejectNonfinite === true);
    }
    const estimate = estimatePrefillMemory({ config, tokens, tp, sp, reduce, subLayers, env: process.env, checkpoint: watch !== undefined });
    checkMemory(`prefill of ${config.name} at tp ${tp} with T ${tokens}`, estimate, limit);
    const prepared = preparePrefill({ config, tokens, tp, sp, reduce, seed, subLayers, weights: watch, env: process.env });
    const reason =
      sp === 'off'
        ? SP_OFF_REASON
        : sp === 'on'
          ? prepared.plan.reason
          : planWithFloor({ config, tokens, tp, minTokens: floor.minTokens, capturing: false, mtp: config.mtp }, floor.source).reason;
    const backend = await interruptible(() => createBackend(backendName));
    const device = backend.describe();
    const progress = nodeProgress(`prefill ${config.name} tp${tp} T=${tokens}`, { quiet: opts.quiet });
    const run = async (): Promise<RunResult> => {
      try {
        return await runOnce(backend, prepared.graph, prepared.feeds, prepared.weights, { onNode: progress.onNode });
      } finally {
        progress.stop();
        await backend.dispose();
      }
    };
    // The CPU reference computes on this thread, so no signal handler could run before it
    // ends: the default disposition stays (Ctrl-C ends it at once; it has nothing to clean up).
    const result = backend instanceof CpuBackend ? await run() : await interruptible(run);
    const nonFinite = watch?.found() ?? new Map();
    for (const [name, count] of nonFinite) process.stderr.write(`hcsp: warning: ${opts.weights}: ${describeNonFinite(name, count)}\n`);
    const h = result.values.get(prepared.outputs.h)!;
    const mtp = prepared.outputs.mtpState ? result.values.get(prepared.outputs.mtpState)! : null;
    const { seconds, hcRowsPerRank, commBytesPerRank } = result.stats;
    const summary = {
      backend: backend.name,
      device,
      config: config.name,
      stack,
      tp,
      tokens,
      sp: prepared.plan.sp,
      spRequested: sp,
      reason,
      chunk: prepared.plan.chunk,
      spStartLayer: prepared.plan.spStartLayer,
      reduce,
      seed,
      weights: opts.weights ? resolve(opts.weights) : `synthetic (seed ${seed})`,
      nonFiniteWeights: Object.fromEntries(nonFinite),
      memoryEstimateBytes: estimate.bytes,
      seconds,
      tokensPerSecond: tokens / seconds,
      outputSha256: sha256(h),
      mtpStateSha256: mtp ? sha256(mtp) : null,
      hcRowsPerRank,
      commBytesPerRank,
    };
    if (opts.json) return `${JSON.stringify(summary)}\n`;
    const lines = [
      `prefill ${config.name} (${stack}) on ${summary.device}: T=${tokens}, tp=${tp}, SP ${summary.sp ? `on (C=${summary.chunk} rows/rank from layer ${summary.spStartLayer})` : `off (${summary.reason})`}, reduce=${reduce}`,
      `  weights: ${summary.weights}${nonFinite.size > 0 ? ` (${nonFinite.size} tensors hold NaN/Inf)` : ''}`,
      `  ${seconds.toFixed(3)} s, ${summary.tokensPerSecond.toFixed(1)} tokens/s`,
      `  output sha256 ${summary.outputSha256}`,
      `  HC rows per rank: ${hcRowsPerRank.join(', ')}`,
      `  bytes sent per rank: all-reduce ${commBytesPerRank[0].allReduce}, all-gather ${commBytesPerRank[0].allGather}, reduce-scatter ${commBytesPerRank[0].reduceScatter}`,
    ];
    return `${lines.join('\n')}\n`;
  } finally {
    checkpoint?.close();
  }
}

export function registerPrefill(program: Command): void {
  program
    .command('prefill')
    .description('prefill T seeded tokens through the decoder stack on tp simulated ranks')
    .addOption(new Option('--backend <name>', `executor: ${backendNames().join('|')}`).default('cpu'))
    .option('--config <name>', CONFIG_HELP, DEFAULT_CONFIG)
    .option('--tp <n>', TP_HELP, DEFAULT_TP)
    .option('--tokens <n>', 'tokens in the prefill', '1100')
    .option('--sp <mode>', 'auto (the production gate, see Environment) | on (force sharding) | off', 'auto')
    .option('--reduce <alg>', `reduction order of the collectives: ${REDUCE_ALGORITHMS.join('|')}`, 'ring')
    .option('--seed <n>', 'seed of the token ids and synthetic weights', '0')
    .option('--weights <file>', 'a .safetensors checkpoint (or *.index.json) with Hugging Face names (default: synthetic weights)')
    .option('--stack <kind>', 'model (the real sub-layers) | hc-only (HC steps around a stand-in row-parallel linear)', 'model')
    .option('--max-memory <size>', MAX_MEMORY_HELP)
    .option('--reject-nonfinite', 'refuse checkpoint weights holding NaN or Inf (default: warn on stderr)')
    .option('--quiet', 'no progress on stderr')
    .option('--json', 'print one JSON object')
    .addHelpText('after', SP_ENV_HELP)
    .action(async (opts: PrefillCliOptions) => {
      process.stdout.write(await runPrefillCommand(opts));
    });
}
