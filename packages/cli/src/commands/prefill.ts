// `hcsp prefill`: a prefill of T seeded tokens through the decoder stack on tp simulated
// ranks, on the chosen backend, with the SP plan applied (or forced on/off for testing).
import { createHash } from 'node:crypto';
import { Option, type Command } from 'commander';
import {
  getConfig,
  MODEL_SUB_LAYERS,
  modelWeightSpecs,
  preparePrefill,
  REDUCE_ALGORITHMS,
  STAND_IN_SUB_LAYERS,
  validateTp,
  type ReduceAlgorithm,
  type SpMode,
  type Tensor,
} from '@hcsp/core';
import { SafetensorsWeightSource } from '@hcsp/core/node';
import { BACKEND_NAMES, createBackend, parseBackendName } from '../backends/createBackend.ts';
import { parseIntStrict } from '../parseArgs.ts';
import { nodeProgress } from '../progress.ts';

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
}

function sha256(t: Tensor): string {
  return createHash('sha256').update(new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength)).digest('hex');
}

function oneOf<T extends string>(v: string, allowed: readonly T[], name: string): T {
  if ((allowed as readonly string[]).includes(v)) return v as T;
  throw new Error(`${name} must be one of ${allowed.join('|')}, got '${v}'`);
}

export async function runPrefillCommand(opts: PrefillCliOptions): Promise<string> {
  const backendName = parseBackendName(opts.backend);
  const config = getConfig(opts.config);
  const tp = parseIntStrict(opts.tp, '--tp', { min: 1 });
  const tokens = parseIntStrict(opts.tokens, '--tokens', { min: 1 });
  const seed = parseIntStrict(opts.seed, '--seed', { min: 0 });
  const sp = oneOf<SpMode>(opts.sp, ['auto', 'on', 'off'], '--sp');
  const reduce = oneOf<ReduceAlgorithm>(opts.reduce, REDUCE_ALGORITHMS, '--reduce');
  const stack = oneOf(opts.stack, ['model', 'hc-only'] as const, '--stack');
  validateTp(config, tp);
  const subLayers = stack === 'model' ? MODEL_SUB_LAYERS : STAND_IN_SUB_LAYERS;
  let weights;
  if (opts.weights) {
    weights = SafetensorsWeightSource.open(opts.weights);
    weights.validateAgainst(modelWeightSpecs(config, subLayers));
  }
  const prepared = preparePrefill({ config, tokens, tp, sp, reduce, seed, subLayers, weights, env: process.env });
  const backend = await createBackend(backendName);
  const device = backend.describe();
  const progress = nodeProgress(`prefill ${config.name} tp${tp} T=${tokens}`);
  let result;
  try {
    result = await backend.run(prepared.graph, prepared.feeds, prepared.weights, { onNode: progress.onNode });
  } finally {
    progress.stop();
    await backend.dispose();
  }
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
    reason: prepared.plan.reason,
    chunk: prepared.plan.chunk,
    spStartLayer: prepared.plan.spStartLayer,
    reduce,
    seed,
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
    `  ${seconds.toFixed(3)} s, ${summary.tokensPerSecond.toFixed(1)} tokens/s`,
    `  output sha256 ${summary.outputSha256}`,
    `  HC rows per rank: ${hcRowsPerRank.join(', ')}`,
    `  bytes sent per rank: all-reduce ${commBytesPerRank[0].allReduce}, all-gather ${commBytesPerRank[0].allGather}, reduce-scatter ${commBytesPerRank[0].reduceScatter}`,
  ];
  return `${lines.join('\n')}\n`;
}

export function registerPrefill(program: Command): void {
  program
    .command('prefill')
    .description('prefill T seeded tokens through the decoder stack on tp simulated ranks')
    .addOption(new Option('--backend <name>', `executor: ${BACKEND_NAMES.join('|')}`).default('cpu'))
    .option('--config <name>', 'model configuration (flash-next, small, tiny)', 'small')
    .option('--tp <n>', 'tensor-parallel size', '4')
    .option('--tokens <n>', 'tokens in the prefill', '1100')
    .option('--sp <mode>', 'auto (the production gate) | on (force sharding) | off', 'auto')
    .option('--reduce <alg>', `reduction order of the collectives: ${REDUCE_ALGORITHMS.join('|')}`, 'ring')
    .option('--seed <n>', 'seed of the token ids and synthetic weights', '0')
    .option('--weights <file>', 'a .safetensors checkpoint (or *.index.json) with Hugging Face names')
    .option('--stack <kind>', 'model (the real sub-layers) | hc-only (HC steps around a stand-in row-parallel linear)', 'model')
    .option('--json', 'print one JSON object')
    .action(async (opts: PrefillCliOptions) => {
      process.stdout.write(await runPrefillCommand(opts));
    });
}
