// `hcsp xcheck`: cross-backend rounding differences as a command (xcheck/runXcheck.ts):
// which named tensors moved between SPECs, by how much, and which side is farther from the
// float64 value. Exit status: 0 whenever the runs complete, unless --max-ulp is exceeded (1).
import type { Command } from 'commander';
import { maxRowUlp, MODEL_SUB_LAYERS, modelWeightSpecs, overGate, REDUCE_ALGORITHMS, STAND_IN_SUB_LAYERS, type ReduceAlgorithm, type SpMode, type XcheckReport } from '@hcsp/core';
import { CheckpointProblemsError, openCheckpoint, resolveModelConfig, type CheckpointWeightSource } from '@hcsp/core/node';
import { checkpointProblemsError } from '../checkpoint/weightProblems.ts';
import { CONFIG_HELP, DEFAULT_CONFIG, DEFAULT_TP, TP_HELP } from '../defaults.ts';
import { MAX_MEMORY_HELP, memoryLimit } from '../guards/memoryGuard.ts';
import { oneOf, parseIntStrict, parseLayerRange } from '../parseArgs.ts';
import { interruptible } from '../signals.ts';
import { readGoldenDump, runXcheck } from '../xcheck/runXcheck.ts';
import { parseXcheckSpecs } from '../xcheck/xcheckSpec.ts';
import { writeXcheckReport } from '../xcheck/htmlReport.ts';
import { resolve } from 'node:path';

interface XcheckCliOptions {
  config: string;
  weights?: string;
  tokens?: string;
  tp: string;
  compare: string;
  layers?: string;
  seed: string;
  stack: string;
  sp: string;
  reduce: string;
  golden?: string;
  report?: string;
  maxUlp?: string;
  exact: boolean;
  maxMemory?: string;
  quiet?: boolean;
  json?: boolean;
}

function parseMaxUlp(raw: string | undefined): number | null {
  if (raw === undefined) return null;
  const v = Number(raw);
  if (raw.trim() === '' || !Number.isFinite(v) || v < 0) throw new Error(`--max-ulp must be a number of bf16 ulps >= 0, got ${JSON.stringify(raw)}`);
  return v;
}

/** The text summary: per pair, the layers where the runs differ and the worst tensors. */
export function xcheckSummary(report: XcheckReport): string {
  const lines = [`xcheck ${report.config}: T=${report.tokens}, tp=${report.tp}, layers ${report.layers[0]}:${report.layers[1]}, weights ${report.weights}${report.exact ? ', float64 attribution' : ''}`];
  for (const run of report.runs) lines.push(`  run ${run.spec}: ${run.device}; SP ${run.sp ? `on (C=${run.chunk})` : 'off'}, reduce ${run.reduce}, ${run.seconds.toFixed(3)} s`);
  for (const pair of report.pairs) {
    const differing = pair.tensors.filter((t) => t.differing > 0);
    lines.push(`${pair.a} against ${pair.b}: ${differing.length} of ${pair.tensors.length} tensors differ, ${pair.differing} elements, max ${maxRowUlp(pair).toFixed(2)} row-scaled ulp`);
    const byLayer = new Map<number, { differing: number; count: number; rowUlp: number }>();
    for (const t of pair.tensors) {
      const l = byLayer.get(t.layer) ?? { differing: 0, count: 0, rowUlp: 0 };
      l.differing += t.differing;
      l.count += t.count;
      l.rowUlp = Math.max(l.rowUlp, t.rowUlp ?? 0);
      byLayer.set(t.layer, l);
    }
    for (const [layer, l] of [...byLayer].sort((p, q) => p[0] - q[0])) {
      if (l.differing > 0) lines.push(`  layer ${layer}: ${l.differing}/${l.count} differ, max ${l.rowUlp.toFixed(2)} row-scaled ulp`);
    }
    for (const t of [...differing].sort((p, q) => (q.rowUlp ?? Infinity) - (p.rowUlp ?? Infinity)).slice(0, 8)) {
      const side = t.exact?.attributed ? `; farther from float64: ${t.exact.attributed === 'a' ? pair.a : t.exact.attributed === 'b' ? pair.b : 'neither (tie)'} (${t.exact.fartherA} vs ${t.exact.fartherB} elements)` : '';
      lines.push(`    ${t.name}: ${t.differing}/${t.count} differ, max ${t.maxUlp ?? '-'} ulp (row-scaled ${t.rowUlp?.toFixed(2) ?? '-'}), max abs ${t.maxAbs.toExponential(2)}${side}`);
    }
  }
  if (report.maxUlpGate !== null) lines.push(report.ok ? `within --max-ulp ${report.maxUlpGate}` : `EXCEEDS --max-ulp ${report.maxUlpGate}`);
  return `${lines.join('\n')}\n`;
}

export async function runXcheckCommand(opts: XcheckCliOptions): Promise<{ report: XcheckReport; text: string }> {
  const config = resolveModelConfig(opts.config);
  const tp = parseIntStrict(opts.tp, '--tp', { min: 1 });
  const seed = parseIntStrict(opts.seed, '--seed', { min: 0 });
  const sp = oneOf<SpMode>(opts.sp, ['auto', 'on', 'off'], '--sp');
  const reduce = oneOf<ReduceAlgorithm>(opts.reduce, REDUCE_ALGORITHMS, '--reduce');
  const stack = oneOf(opts.stack, ['model', 'hc-only'] as const, '--stack');
  const subLayers = stack === 'model' ? MODEL_SUB_LAYERS : STAND_IN_SUB_LAYERS;
  const maxUlp = parseMaxUlp(opts.maxUlp);
  const golden = opts.golden ? readGoldenDump(opts.golden) : null;
  const specs = parseXcheckSpecs(opts.compare, { sp, reduce }, golden !== null);
  const tokens = golden ? golden.ids.length : parseIntStrict(opts.tokens ?? '1100', '--tokens', { min: 1 });
  if (golden && opts.tokens !== undefined && parseIntStrict(opts.tokens, '--tokens', { min: 1 }) !== tokens) {
    throw new Error(`--tokens ${opts.tokens} disagrees with the ${tokens} input_ids of --golden ${opts.golden}`);
  }
  const layers = opts.layers ? parseLayerRange(opts.layers, '--layers') : ([0, config.numLayers] as [number, number]);
  if (layers[1] > config.numLayers) throw new Error(`--layers ${opts.layers}: config '${config.name}' has ${config.numLayers} layers`);
  let checkpoint: CheckpointWeightSource | undefined;
  if (opts.weights) {
    try {
      checkpoint = openCheckpoint(opts.weights, config, { specs: modelWeightSpecs(config, subLayers) }).source;
    } catch (e) {
      if (e instanceof CheckpointProblemsError) throw checkpointProblemsError(e.problems, opts.weights, `config '${config.name}' (${stack} stack)`);
      throw e;
    }
  }
  try {
    const report = await interruptible(() =>
      runXcheck({
        config,
        subLayers,
        tokens,
        tp,
        seed,
        layers,
        weights: checkpoint,
        weightsLabel: opts.weights ? resolve(opts.weights) : `synthetic (seed ${seed})`,
        ids: golden?.ids,
        specs,
        exact: opts.exact,
        maxUlp,
        golden,
        limit: memoryLimit(opts.maxMemory),
        quiet: opts.quiet === true,
      }),
    );
    if (opts.report) await writeXcheckReport(opts.report, report);
    return { report, text: opts.json ? `${JSON.stringify(report)}\n` : xcheckSummary(report) };
  } finally {
    checkpoint?.close();
  }
}

export function registerXcheck(program: Command): void {
  program
    .command('xcheck')
    .description('run the same prefill on several backends/options (SPECs) and compare every named tensor against the first, attributing each difference against a float64 evaluation of the graph')
    .requiredOption('--compare <specs>', 'comma-separated SPECs backend[:key=value...]: keys sp=auto|on|off, reduce=ring|oneshot|ordered, contract=atom|hf, fp8=e4m3fnuz|e4m3fn, quant=fused|separate, and the backend\'s own (rocm: device=, gemm=); e.g. cpu:sp=off,cpu:sp=on')
    .option('--config <name>', CONFIG_HELP, DEFAULT_CONFIG)
    .option('--weights <path>', 'a Hugging Face model folder or .safetensors file (default: synthetic weights)')
    .option('--tokens <n>', 'tokens in the prefill (default 1100, or the golden dump\'s)')
    .option('--tp <n>', TP_HELP, DEFAULT_TP)
    .option('--layers <A:B>', 'only decoder layers [A, B)')
    .option('--seed <n>', 'seed of the token ids and synthetic weights', '0')
    .option('--stack <kind>', 'model (the real sub-layers) | hc-only (HC steps around a stand-in row-parallel linear: full HC dimensions at any depth)', 'model')
    .option('--sp <mode>', 'the SP mode of a SPEC that does not say', 'auto')
    .option('--reduce <alg>', `the reduction order of a SPEC that does not say: ${REDUCE_ALGORITHMS.join('|')}`, 'ring')
    .option('--golden <file.safetensors>', 'also compare the first SPEC\'s run against a golden dump another engine wrote (its input_ids are the run\'s)')
    .option('--report <dir>', 'write DIR/index.html (self-contained, opens offline) and DIR/report.json')
    .option('--max-ulp <k>', "exit 1 when any tensor differs by more than k bf16 ulps of its row's largest value (row-scaled; any difference of an integer tensor counts): a CI gate")
    .option('--no-exact', 'skip the float64 evaluation (no attribution)')
    .option('--max-memory <size>', MAX_MEMORY_HELP)
    .option('--quiet', 'no progress on stderr')
    .option('--json', 'print one JSON object')
    .action(async (opts: XcheckCliOptions) => {
      const { report, text } = await runXcheckCommand(opts);
      process.stdout.write(text);
      if (!report.ok) {
        const over = overGate(report.pairs, report.maxUlpGate!);
        const worst = over.reduce((w, o) => ((o.tensor.rowUlp ?? Infinity) > (w.tensor.rowUlp ?? Infinity) ? o : w));
        throw new Error(
          `xcheck: ${over.length} tensor${over.length > 1 ? 's' : ''} exceed${over.length > 1 ? '' : 's'} --max-ulp ${report.maxUlpGate}: the largest, ${worst.tensor.name} (${worst.pair.a} against ${worst.pair.b}), ${worst.tensor.rowUlp === null ? 'an integer tensor that differs' : `${worst.tensor.rowUlp} row-scaled ulp`}`,
        );
      }
    });
}
