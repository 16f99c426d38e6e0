// `hcsp xcheck`: cross-backend rounding differences as a command (xcheck/runXcheck.ts):
// which named tensors moved between SPECs, by how much, and which side is farther from the
// float64 value. Exit status: 0 whenever the runs complete, unless --max-ulp is exceeded or
// a tensor holds NaN or Inf under it (1). Before any work: --report is checked, and the
// memory every SPEC's run needs is judged; the summary is printed before the report is
// written. The runs compute on this thread and turn its event loop (runXcheck.ts): a
// signal ends them within a second (exit 128 + its number, nothing written).
import type { Command } from 'commander';
import { MODEL_SUB_LAYERS, modelWeightSpecs, REDUCE_ALGORITHMS, STAND_IN_SUB_LAYERS, type ReduceAlgorithm, type SpMode } from '@hcsp/core';
import {
  attributionText,
  maxRowUlp,
  pairVerdict,
  tensorGroup,
  ulpText,
  nonFiniteCount,
  overGate,
  routingText,
  type XcheckPair,
  type XcheckReport,
  type XcheckTensor,
} from '@hcsp/core/xcheck';
import { CheckpointProblemsError, openCheckpoint, resolveModelConfig, type CheckpointWeightSource } from '@hcsp/core/node';
import { checkpointProblemsError } from '../checkpoint/weightProblems.ts';
import { CONFIG_HELP, DEFAULT_CONFIG, DEFAULT_TP, TP_HELP } from '../defaults.ts';
import { checkMemory, MAX_MEMORY_HELP, memoryLimit } from '../guards/memoryGuard.ts';
import { printResultsOnSaveFailure, ResultsNotSavedError } from '../output/resultsNotSaved.ts';
import { oneOf, parseIntStrict, parseLayerRange } from '../parseArgs.ts';
import { interruptible } from '../signals.ts';
import { readGoldenDump, runXcheck } from '../xcheck/runXcheck.ts';
import { estimateXcheckMemory } from '../xcheck/xcheckMemory.ts';
import { parseXcheckSpecs } from '../xcheck/xcheckSpec.ts';
import { checkXcheckReport, writeXcheckReport } from '../xcheck/htmlReport.ts';
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
  force?: boolean;
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

/** How a tensor over the gate is: NaN/Inf first (no ulp figure reaches them), then the largest row-scaled distance. */
function overness(t: XcheckTensor): number {
  return nonFiniteCount(t) > 0 ? Infinity : (t.rowUlp ?? Infinity);
}

function nonFiniteText(pair: XcheckPair, t: XcheckTensor): string {
  return `${t.nonFinite.a} NaN/Inf in ${pair.a}, ${t.nonFinite.b} in ${pair.b}`;
}

/** A layer's name in the text: the same group names as the report and the dev page (embed, L{i}, final, mtp). */
function groupOf(t: XcheckTensor): string {
  return tensorGroup(t.name);
}

/** The text summary: per pair the verdict first, then where it starts, grows, the noise floor, the flips, and the worst tensors. */
export function xcheckSummary(report: XcheckReport): string {
  const lines = [
    `xcheck ${report.config}: T=${report.tokens}, tp=${report.tp}, layers ${report.layers[0]}:${report.layers[1]}, weights ${report.weights}${report.exact ? ', float64 attribution' : ''}`,
  ];
  for (const run of report.runs)
    lines.push(`  run ${run.spec}: ${run.device}; SP ${run.sp ? `on (C=${run.chunk})` : 'off'}, reduce ${run.reduce}, ${run.seconds.toFixed(3)} s`);
  for (const pair of report.pairs) {
    const v = pair.verdict ?? pairVerdict(pair);
    const differing = pair.tensors.filter((t) => t.differing > 0);
    lines.push(`${pair.a} (a) against ${pair.b} (b):`);
    lines.push(`  verdict: ${v.line}`);
    if (v.first) {
      lines.push(
        `  first difference (graph order): ${v.first.name}, ${v.first.op}${v.first.at ? `, row ${v.first.at.row} col ${v.first.at.col}` : ''}: ${ulpText(v.first.rowUlp)} row-scaled ulp${v.first.floor ? `; each side's own error against float64 there: a ${ulpText(v.first.floor.a)}, b ${ulpText(v.first.floor.b)}` : ''}`,
      );
    }
    if (v.growth)
      lines.push(
        `  grows most at ${v.growth.name} (${v.growth.kind}: ${v.growth.op}): ${ulpText(v.growth.from)} -> ${ulpText(v.growth.rowUlp)} row-scaled ulp`,
      );
    if (v.noiseFloor)
      lines.push(`  noise floor (each side's largest own error against float64): a ${ulpText(v.noiseFloor.a)}, b ${ulpText(v.noiseFloor.b)} row-scaled ulp`);
    const attribution = attributionText(v, pair);
    if (attribution) lines.push(`  ${attribution}`);
    for (const f of v.routing) lines.push(`  routing flips, layer ${f.layer}: ${f.rows.length} of ${f.count} rows (${routingText(f)})`);
    for (const f of v.selection) lines.push(`  QSA selection flips, layer ${f.layer}: ${f.rows.length} of ${f.count} rows keep another number of blocks`);
    lines.push(`  ${differing.length} of ${pair.tensors.length} tensors differ, ${pair.differing} elements, max ${maxRowUlp(pair).toFixed(2)} row-scaled ulp`);
    const byGroup = new Map<string, { differing: number; count: number; rowUlp: number }>();
    for (const t of pair.tensors) {
      const l = byGroup.get(groupOf(t)) ?? { differing: 0, count: 0, rowUlp: 0 };
      l.differing += t.differing;
      l.count += t.count;
      l.rowUlp = Math.max(l.rowUlp, t.rowUlp ?? 0);
      byGroup.set(groupOf(t), l);
    }
    for (const [group, l] of byGroup)
      if (l.differing > 0) lines.push(`    ${group}: ${l.differing}/${l.count} differ, max ${l.rowUlp.toFixed(2)} row-scaled ulp`);
    const nonFinite = pair.tensors.filter((t) => nonFiniteCount(t) > 0);
    if (nonFinite.length > 0) {
      lines.push(`  ${nonFinite.length} tensor${nonFinite.length > 1 ? 's hold' : ' holds'} NaN or Inf (a failure under any --max-ulp):`);
      for (const t of nonFinite.slice(0, 8)) lines.push(`    ${t.name}: ${nonFiniteText(pair, t)}`);
      if (nonFinite.length > 8) lines.push(`    ... (${nonFinite.length - 8} more)`);
    }
    // integer values (router ids, kept counts) are the flips above
    const floats = differing.filter((t) => t.rowUlp !== null);
    if (floats.length > 0) lines.push('  largest (row-scaled):');
    for (const t of [...floats].sort((p, q) => (q.rowUlp ?? 0) - (p.rowUlp ?? 0)).slice(0, 8)) {
      const e = t.exact;
      const side = e?.attributed
        ? `; own error against float64 a ${ulpText(e.a.maxUlp)}, b ${ulpText(e.b.maxUlp)}; farther by count: ${e.attributed === 'a' ? pair.a : e.attributed === 'b' ? pair.b : 'tie'} (${e.fartherA} vs ${e.fartherB} elements)`
        : '';
      lines.push(
        `    ${t.name}: ${t.rowUlp?.toFixed(2) ?? '-'} row-scaled ulp (elementwise max ${t.maxUlp ?? '-'}), ${t.differing}/${t.count} differ, max abs ${t.maxAbs.toExponential(2)}${side}`,
      );
    }
  }
  if (report.golden?.notCompared.length) {
    const n = report.golden.notCompared;
    lines.push(
      `golden ${report.golden.file}: ${n.length} of the run's tensors not in it, not compared: ${n.slice(0, 8).join(', ')}${n.length > 8 ? `, ... (${n.length - 8} more)` : ''}`,
    );
  }
  if (report.maxUlpGate !== null) lines.push(report.ok ? `within --max-ulp ${report.maxUlpGate}` : `EXCEEDS --max-ulp ${report.maxUlpGate}`);
  return `${lines.join('\n')}\n`;
}

/** The --max-ulp failure as one line: how many tensors, and the worst (NaN/Inf before any distance). */
export function gateFailure(report: XcheckReport): string {
  const over = overGate(report.pairs, report.maxUlpGate!);
  const worst = over.reduce((w, o) => (overness(o.tensor) > overness(w.tensor) ? o : w));
  const t = worst.tensor;
  const how =
    nonFiniteCount(t) > 0
      ? `holds NaN or Inf (${nonFiniteText(worst.pair, t)})`
      : t.rowUlp === null
        ? 'an integer tensor that differs'
        : `${t.rowUlp} row-scaled ulp`;
  return `xcheck: ${over.length} tensor${over.length > 1 ? 's' : ''} exceed${over.length > 1 ? '' : 's'} --max-ulp ${report.maxUlpGate}: the largest, ${t.name} (${worst.pair.a} against ${worst.pair.b}), ${how}`;
}

/** The command: a signal from its start on ends it as an interruption (signals.ts). */
export function runXcheckCommand(opts: XcheckCliOptions): Promise<{ report: XcheckReport; text: string; notice?: string }> {
  return interruptible(() => xcheck(opts));
}

async function xcheck(opts: XcheckCliOptions): Promise<{ report: XcheckReport; text: string; notice?: string }> {
  // the output before any work: a report that cannot be written is refused now, not after the runs
  const reportDir = opts.report === undefined ? null : checkXcheckReport(opts.report, opts.force === true);
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
  const limit = memoryLimit(opts.maxMemory);
  // the checkpoint's headers only (its FP8 linears count as FP8 in the estimate); no weight is read yet
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
    // from the configuration alone, before the inputs and weights of any SPEC are made
    const stages = estimateXcheckMemory({
      config,
      subLayers,
      tokens,
      tp,
      layers,
      specs,
      exact: opts.exact,
      checkpoint: opts.weights !== undefined,
      ...(checkpoint ? { fp8Weights: checkpoint } : {}),
      env: process.env,
    });
    for (const stage of stages) checkMemory(`${stage.what}: prefill of ${config.name} at tp ${tp} with T ${tokens}`, stage.estimate, limit);
    const report = await runXcheck({
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
      quiet: opts.quiet === true,
    });
    const text = opts.json ? `${JSON.stringify(report)}\n` : xcheckSummary(report);
    if (reportDir) {
      let files: { json: string; html: string };
      try {
        files = await writeXcheckReport(reportDir, report);
      } catch (e) {
        throw new ResultsNotSavedError((e as Error).message, text);
      }
      // the path last, where the eye ends; --json keeps stdout one JSON object and says it on stderr
      const where = `report: ${files.html} (data: ${files.json})\n`;
      return { report, text: opts.json ? text : `${text}${where}`, notice: opts.json ? where : undefined };
    }
    return { report, text };
  } finally {
    checkpoint?.close();
  }
}

export function registerXcheck(program: Command): void {
  program
    .command('xcheck')
    .description(
      'run the same prefill on several backends/options (SPECs) and compare every named tensor against the first, attributing each difference against a float64 evaluation of the graph',
    )
    .requiredOption(
      '--compare <specs>',
      "comma-separated SPECs backend[:key=value...]: keys sp=auto|on|off, reduce=ring|oneshot|ordered, contract=atom|hf|hf-eager, ties=lower-index|torch-cpu (top-k ties; default torch-cpu under hf-eager), fp8=e4m3fnuz|e4m3fn, quant=fused|separate, and the backend's own (rocm: device=, gemm=, kernels=; gemm defaults to vendor-invariant on device=hip|cuda); e.g. cpu:sp=off,cpu:sp=on",
    )
    .option('--config <name>', CONFIG_HELP, DEFAULT_CONFIG)
    .option('--weights <path>', 'a Hugging Face model folder or .safetensors file (default: synthetic weights)')
    .option('--tokens <n>', "tokens in the prefill (default 1100, or the golden dump's)")
    .option('--tp <n>', TP_HELP, DEFAULT_TP)
    .option('--layers <A:B>', 'only decoder layers [A, B)')
    .option('--seed <n>', 'seed of the token ids and synthetic weights', '0')
    .option(
      '--stack <kind>',
      'model (the real sub-layers) | hc-only (HC steps around a stand-in row-parallel linear: full HC dimensions at any depth)',
      'model',
    )
    .option('--sp <mode>', 'the SP mode of a SPEC that does not say', 'auto')
    .option('--reduce <alg>', `the reduction order of a SPEC that does not say: ${REDUCE_ALGORITHMS.join('|')}`, 'ring')
    .option('--golden <file.safetensors>', "also compare the first SPEC's run against a golden dump another engine wrote (its input_ids are the run's)")
    .option('--report <dir>', 'write DIR/index.html (self-contained, opens offline) and DIR/report.json (checked before the runs; symbolic links are refused)')
    .option('--force', 'replace an existing DIR/index.html and DIR/report.json')
    .option(
      '--max-ulp <k>',
      "exit 1 when any tensor differs by more than k bf16 ulps of its row's largest value (row-scaled; any difference of an integer tensor counts, and any NaN or Inf on either side): a CI gate",
    )
    .option('--no-exact', 'skip the float64 evaluation (no attribution)')
    .option('--max-memory <size>', MAX_MEMORY_HELP)
    .option('--quiet', 'no progress on stderr')
    .option('--json', 'print one JSON object')
    .action(async (opts: XcheckCliOptions) => {
      const { report, text, notice } = await printResultsOnSaveFailure(() => runXcheckCommand(opts));
      process.stdout.write(text);
      if (notice) process.stderr.write(notice);
      if (!report.ok) throw new Error(gateFailure(report));
    });
}
