// `hcsp prefill`: a prefill of T tokens (seeded, or a prompt's ids) through the decoder stack
// on tp ranks, on the chosen backend, with the SP plan applied (or forced on/off for
// testing); optionally a golden dump of the named intermediate values. The ranks are
// simulated in this process (--comm sim), or this process is one of them under hcsp launch
// or mpirun (--comm mpi|nccl, @hcsp/ranks' prefillRank.ts).
import { createHash } from 'node:crypto';
import { join, resolve } from 'node:path';
import { Option, type Command } from 'commander';
import {
  CpuBackend,
  FP8_FORMATS,
  rankGraph,
  MODEL_SUB_LAYERS,
  modelWeightSpecs,
  preparePrefill,
  PRESETS,
  readSpFloor,
  REDUCE_ALGORITHMS,
  STAND_IN_SUB_LAYERS,
  type Fp8Format,
  type ReduceAlgorithm,
  type Backend,
  type EngineStats,
  type RunResult,
  type SpMode,
  type Tensor,
} from '@hcsp/core';
import {
  CheckpointProblemsError,
  JSON_LIMITS,
  JsonInputError,
  openCheckpoint,
  readJsonInput,
  resolveModelConfig,
  unusedTensorsWarning,
  type CheckpointWeightSource,
} from '@hcsp/core/node';
import type { RocmBackend, VendorGemmStats } from '@hcsp/backend-rocm';
import { backendNames, createBackend, findBackend } from '@hcsp/backends';
import { backendOptionsFromFlags, deviceOption, gemmOption, kernelsOption, type BackendChoiceFlags } from '../backendChoice.ts';
import { checkpointProblemsError } from '../checkpoint/weightProblems.ts';
import { dumpTensors, qsaDropStats } from './prefillDump.ts';
import {
  checkRankBackend,
  COLLECTIVE_TIMEOUT_ENV,
  COMM_MODES,
  collectiveTimeoutMs,
  DEFAULT_COLLECTIVE_TIMEOUT_S,
  planDigest,
  QuietRankExit,
  rankBackendFlags,
  runPrefillRanked,
  type CommMode,
  type PrefillRank,
  type RankRunExtras,
} from '@hcsp/ranks';
import { resolveOutputTarget } from '../output/outputTarget.ts';
import { writeOutput } from '../output/safeOutputFile.ts';
import { layoutSafetensors } from '@hcsp/core';
import { describeNonFinite, NonFiniteWatch } from '../checkpoint/nonFinite.ts';
import { configOption, SP_ENV_HELP, tpOption } from '../defaults.ts';
import { formatBytes } from '../guards/byteSize.ts';
import { checkMemory, MAX_MEMORY_HELP, memoryLimit } from '../guards/memoryGuard.ts';
import { estimatePrefillMemory } from '../guards/prefillMemory.ts';
import { oneOf, parseIntStrict, parseTokens } from '../parseArgs.ts';
import { nodeProgress } from '../progress.ts';
import { interruptible } from '../signals.ts';
import { planWithFloor, SP_OFF_REASON } from '../sp/planWithFloor.ts';
import { chromeTrace } from '../trace/chromeTrace.ts';
import { gatherTimings } from '../trace/gatherTimings.ts';
import { NodeTimer, type RunTiming } from '../trace/nodeTimer.ts';

interface PrefillCliOptions extends BackendChoiceFlags {
  backend: string;
  config: string;
  tp: string;
  tokens?: string;
  sp: string;
  reduce: string;
  seed: string;
  weights?: string;
  stack: string;
  json?: boolean;
  maxMemory?: string;
  quiet?: boolean;
  runs?: string;
  rejectNonfinite?: boolean;
  ids?: string;
  dump?: string;
  trace?: string;
  fp8?: string;
  qsaSelection?: string;
  pleTable?: string;
  logits?: string;
  mtpDrafter?: string;
  comm?: string;
  collectiveTimeout?: string;
}

/** A JSON value for a message: short, and never JSON.stringify of a nested value (deep nesting overflows it). */
function describeJsonValue(v: unknown): string {
  if (typeof v === 'number') return Number.isFinite(v) ? String(v) : 'a number beyond the float64 range';
  if (typeof v === 'string') return v.length > 40 ? `the string ${JSON.stringify(v.slice(0, 40))}...` : `the string ${JSON.stringify(v)}`;
  if (Array.isArray(v)) return 'an array';
  return v === null ? 'null' : typeof v === 'object' ? 'an object' : String(v);
}

/** A prompt's token ids: a JSON array of integers, each inside the vocabulary. */
function readTokenIds(path: string, vocabSize: number): Int32Array {
  let parsed: unknown;
  try {
    parsed = readJsonInput(path, JSON_LIMITS.ids);
  } catch (e) {
    throw new Error(`--ids ${path}: ${e instanceof JsonInputError ? e.reason : (e as Error).message}`);
  }
  if (!Array.isArray(parsed) || parsed.length === 0) throw new Error(`--ids ${path}: expected a non-empty JSON array of token ids`);
  const bad = parsed.findIndex((v) => !(Number.isSafeInteger(v) && v >= 0 && v < vocabSize));
  if (bad >= 0) throw new Error(`--ids ${path}: token ${bad} is ${describeJsonValue(parsed[bad])}, not an integer in [0, ${vocabSize})`);
  return Int32Array.from(parsed as number[]);
}

function sha256(t: Tensor): string {
  return createHash('sha256')
    .update(new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength))
    .digest('hex');
}

export async function runPrefillCommand(opts: PrefillCliOptions): Promise<string> {
  const comm = oneOf<CommMode>(opts.comm ?? 'sim', COMM_MODES, '--comm');
  if (comm === 'sim') {
    // checked in every mode, as the SP variables are: a malformed value is an error even where it has no effect
    collectiveTimeoutMs('mpi', opts.collectiveTimeout, process.env);
    return prefill(opts, null);
  }
  return runPrefillRanked(comm, (rank) => prefill(opts, rank), { collectiveTimeout: opts.collectiveTimeout });
}

/** The prefill, of all ranks in this process (rank null) or as one rank of an MPI job. */
/** one process's (or rank's) engine counters over the last run, for the text summary */
function engineLine(e: EngineStats, who: string, runs: number): string {
  const d = e.device;
  const device = d
    ? `${d.kernelLaunches} launches, ${d.hostSyncs} host syncs, ${d.deviceAllocations} device allocations, ${d.deviceFrees} frees, ${d.memsets} memsets, ${formatBytes(d.bytesToDevice)} to and ${formatBytes(d.bytesFromDevice)} from the device`
    : 'no device counters';
  return `  engine (${who}, run ${runs} of ${runs}): ${device}; host enqueue ${(e.enqueueSeconds * 1000).toFixed(1)} ms${e.recorded ? ' (one replay of the recorded run)' : ' (node by node)'}, wait ${(e.waitSeconds * 1000).toFixed(1)} ms; prepare ${e.prepareSeconds.toFixed(2)} s; memory plan ${formatBytes(e.memoryPlan.poolBytes)} in ${e.memoryPlan.blocks} blocks`;
}

/** the vendor GEMM's plans and fallbacks on the rocm backend's GPU device (null elsewhere) */
function vendorGemmOf(backend: Backend): VendorGemmStats | null {
  const gpu = (backend as Partial<RocmBackend>).gpu;
  return gpu && gpu.kind !== 'emulated' ? gpu.vendorGemm() : null;
}

/**
 * The production path (rocm) keeps the PLE table where ATOM does, a vocab slice per rank on
 * its device; the simulators of every rank in one process (cpu, webgpu) read its rows on
 * demand: every rank's slice in one process is the whole table (102 GB bf16 for Flash-Next).
 */
function defaultPleTable(backend: string): 'vocab-parallel' | 'gathered' {
  return backend === 'rocm' ? 'vocab-parallel' : 'gathered';
}

/** --runs at most: a benchmark's repeat count, not a soak */
const MAX_RUNS = 1000;

async function prefill(opts: PrefillCliOptions, rank: PrefillRank | null): Promise<string> {
  const backendName = findBackend(opts.backend).name;
  if (rank) checkRankBackend(backendName, rank.mode);
  const backendOptions = backendOptionsFromFlags(backendName, opts);
  const config = resolveModelConfig(opts.config);
  const tp = parseIntStrict(opts.tp, '--tp', { min: 1 });
  rank?.checkWorld(tp);
  const ids = opts.ids ? readTokenIds(opts.ids, config.vocabSize) : undefined;
  const tokens = ids ? ids.length : parseTokens(opts.tokens ?? '1100');
  if (ids && opts.tokens !== undefined && parseTokens(opts.tokens) !== ids.length) {
    throw new Error(`--tokens ${opts.tokens} disagrees with the ${ids.length} ids in --ids ${opts.ids}`);
  }
  const fp8 = opts.fp8 === undefined ? null : oneOf<Fp8Format>(opts.fp8, Object.keys(FP8_FORMATS) as Fp8Format[], '--fp8');
  const qsaSelection =
    oneOf(opts.qsaSelection ?? 'replicated', ['replicated', 'row-sharded'] as const, '--qsa-selection') === 'row-sharded' ? 'rowSharded' : 'replicated';
  const pleTable =
    oneOf(opts.pleTable ?? defaultPleTable(backendName), ['vocab-parallel', 'gathered'] as const, '--ple-table') === 'vocab-parallel'
      ? 'vocabParallel'
      : 'gathered';
  const logits = oneOf(opts.logits ?? 'last', ['last', 'all'] as const, '--logits');
  const mtpDrafter = oneOf(opts.mtpDrafter ?? 'gathered', ['gathered', 'sharded'] as const, '--mtp-drafter');
  const seed = parseIntStrict(opts.seed, '--seed', { min: 0 });
  const runs = parseIntStrict(opts.runs ?? '1', '--runs', { min: 1, max: MAX_RUNS });
  const sp = oneOf<SpMode>(opts.sp, ['auto', 'on', 'off'], '--sp');
  const reduce = oneOf<ReduceAlgorithm>(opts.reduce, REDUCE_ALGORITHMS, '--reduce');
  const stack = oneOf(opts.stack, ['model', 'hc-only'] as const, '--stack');
  // Read in every --sp mode: a malformed variable is an error even where it has no effect.
  const floor = readSpFloor(process.env);
  const limit = memoryLimit(opts.maxMemory);
  const subLayers = stack === 'model' ? MODEL_SUB_LAYERS : STAND_IN_SUB_LAYERS;
  let checkpoint: CheckpointWeightSource | undefined;
  let watch: NonFiniteWatch | undefined;
  let checkpointInputs: string[] = [];
  try {
    if (opts.weights) {
      try {
        const opened = openCheckpoint(opts.weights, config, { specs: modelWeightSpecs(config, subLayers) });
        checkpoint = opened.source;
        checkpointInputs = opened.inputs;
        const unused = unusedTensorsWarning(opened.unused);
        if (unused) process.stderr.write(`hcsp: warning: ${opts.weights}: ${unused}\n`);
      } catch (e) {
        if (e instanceof CheckpointProblemsError) throw checkpointProblemsError(e.problems, opts.weights, `config '${config.name}' (${stack} stack)`);
        throw e;
      }
      watch = new NonFiniteWatch(checkpoint, opts.weights, opts.rejectNonfinite === true);
    }
    // Every file the run reads, the checkpoint's shards, index and config.json included.
    const inputs = [
      opts.ids,
      ...(Object.hasOwn(PRESETS, opts.config) ? [] : [opts.config, join(opts.config, 'config.json')]),
      opts.weights,
      ...checkpointInputs,
    ];
    const dumpTarget =
      opts.dump === undefined
        ? null
        : resolveOutputTarget(
            opts.dump,
            '--dump',
            inputs.filter((p): p is string => p !== undefined),
          );
    if (opts.trace === '-') throw new Error('--trace -: the trace is a file (--trace FILE.json); standard output carries the summary');
    // rank 0 writes the job's trace (on another node its folder need not exist)
    const traceTarget =
      opts.trace === undefined || (rank && rank.rank !== 0)
        ? null
        : resolveOutputTarget(
            opts.trace,
            '--trace',
            inputs.filter((p): p is string => p !== undefined),
          );
    if (traceTarget?.kind === 'file' && dumpTarget?.kind === 'file' && traceTarget.path === dumpTarget.path)
      throw new Error(`--trace ${opts.trace}: the same file as --dump ${opts.dump}`);
    const estimate = estimatePrefillMemory({
      config,
      tokens,
      tp,
      sp,
      reduce,
      subLayers,
      pleTable,
      env: process.env,
      checkpoint: watch !== undefined,
      ...(watch ? { fp8Weights: { source: watch, ...(fp8 ? { format: fp8 } : {}) } } : {}),
    });
    checkMemory(`prefill of ${config.name} at tp ${tp} with T ${tokens}`, estimate, limit);
    const prepared = preparePrefill({
      config,
      tokens,
      tp,
      sp,
      reduce,
      seed,
      subLayers,
      weights: watch,
      env: process.env,
      ids,
      fp8,
      qsaSelection,
      pleTable,
      logits,
      mtpDrafter,
      dump: dumpTarget !== null,
    });
    // rank 0's selection of every QSA layer, to count what the indexer dropped
    const selections = prepared.graph.nodes.filter((n) => n.op === 'attnCausalQsa' && n.rank === 0).map((n) => ({ layer: n.layer, id: n.inputs[3]! }));
    const reason =
      sp === 'off'
        ? SP_OFF_REASON
        : sp === 'on'
          ? prepared.plan.reason
          : planWithFloor({ config, tokens, tp, minTokens: floor.minTokens, capturing: false, mtp: config.mtp }, floor.source).reason;
    const backend = await interruptible(() => createBackend(backendName, backendOptions));
    rank?.checkBackend(backend);
    const device = backend.describe();
    // under mpirun, rank 0's progress stands for all
    const progress = nodeProgress(`prefill ${config.name} tp${tp} T=${tokens}${rank ? ` (rank ${rank.rank})` : ''}`, {
      quiet: opts.quiet || (rank !== null && rank.rank !== 0),
    });
    const runSeconds: number[] = [];
    // --trace: the last run's node times, this process's (its part's, as a rank)
    const timer = opts.trace !== undefined ? new NodeTimer() : null;
    const traced: { timing: RunTiming | null } = { timing: null };
    const traceNodes = rank ? rankGraph(prepared.graph, rank.rank).nodes.length : prepared.graph.nodes.length;
    const onNode = (done: number, total: number) => {
      timer?.onNode(done);
      progress.onNode(done, total);
    };
    const timed = {
      beforeRun: () => timer?.begin(),
      afterRun: (r: RunResult) => {
        if (timer) traced.timing = timer.end(r.stats.engine?.recorded === true, traceNodes);
      },
    };
    const run = async (): Promise<RunResult & Partial<RankRunExtras>> => {
      try {
        const keep = [
          ...selections.map((s) => s.id),
          ...Object.values(prepared.outputs.dumpValues),
          ...(prepared.outputs.mtp ? [prepared.outputs.mtp.logits, prepared.outputs.mtp.draftTokens] : []),
          prepared.outputs.logits,
          prepared.outputs.nextTokens,
        ];
        if (!rank) {
          const session = await backend.prepare(prepared.graph, prepared.weights);
          try {
            let result: RunResult | null = null;
            for (let i = 0; i < runs; i++) {
              timed.beforeRun();
              result = await session.run(prepared.feeds, { onNode, keep });
              timed.afterRun(result);
              runSeconds.push(result.stats.seconds);
            }
            return { ...result!, enginePerRank: result!.stats.engine ? [result!.stats.engine] : undefined };
          } finally {
            await session.dispose();
          }
        }
        // every rank is ready (or all end together): only then does any rank enter a collective
        await rank.startTogether(null, planDigest(prepared.graph, prepared.feeds));
        return await rank.run(backend, prepared.graph, prepared.feeds, prepared.weights, {
          onNode,
          keep,
          runs,
          weightBytesRead: () => checkpoint?.bytesRead() ?? 0,
          ...timed,
        });
      } finally {
        progress.stop();
        await backend.dispose();
      }
    };
    // The CPU reference computes on this thread, so no signal handler could run before it
    // ends: the default disposition stays (Ctrl-C ends it at once; it has nothing to clean up).
    const result = backend instanceof CpuBackend ? await run() : await interruptible(run);
    // every rank sends its timing to rank 0, which writes the whole job's trace
    const { timing } = traced;
    const timings = timing === null ? null : rank ? await gatherTimings(rank.control, timing) : [timing];
    const nonFinite = watch?.found() ?? new Map();
    for (const [name, count] of nonFinite) process.stderr.write(`hcsp: warning: ${opts.weights}: ${describeNonFinite(name, count)}\n`);
    // every output is rank 0's: the other ranks are done
    if (rank && rank.rank !== 0) return '';
    const h = result.values.get(prepared.outputs.h)!;
    const qsa = qsaDropStats(
      config,
      selections.map((s) => ({ layer: s.layer, blocks: result.values.get(s.id)! })),
    );
    const nextTokens = Array.from(result.values.get(prepared.outputs.nextTokens)!.data as Int32Array);
    const mtpOut = prepared.outputs.mtp;
    if (dumpTarget) {
      const layout = layoutSafetensors(dumpTensors(prepared, result.values), {
        producer: 'hcsp prefill',
        config: config.name,
        tp: String(tp),
        sp: String(prepared.plan.sp),
      });
      await writeOutput(dumpTarget, [layout.header, ...layout.order.map((o) => o.bytes)], '--dump', opts.dump!);
    }
    if (traceTarget && timings) {
      const trace = chromeTrace({ graph: prepared.graph, mode: rank ? 'ranks' : 'sim', timings, device: `${backend.name}: ${device}` });
      await writeOutput(traceTarget, [Buffer.from(JSON.stringify(trace))], '--trace', opts.trace!);
    }
    const mtp = prepared.outputs.mtpState ? result.values.get(prepared.outputs.mtpState)! : null;
    const { seconds, hcRowsPerRank, commBytesPerRank } = result.stats;
    const summary = {
      backend: backend.name,
      backendOptions,
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
      comm: rank ? rank.mode : 'sim',
      seed,
      weights: opts.weights ? resolve(opts.weights) : `synthetic (seed ${seed})`,
      nonFiniteWeights: Object.fromEntries(nonFinite),
      memoryEstimateBytes: estimate.bytes,
      seconds,
      tokensPerSecond: tokens / seconds,
      ids: opts.ids ? resolve(opts.ids) : `seeded (seed ${seed})`,
      fp8,
      quant: fp8 ? prepared.plan.quant : null,
      // linears run as FP8 GEMMs on the checkpoint's own FP8 weights (per-channel scales)
      fp8WeightLinears: prepared.fp8WeightLinears,
      qsaSelection: opts.qsaSelection ?? 'replicated',
      pleTable: pleTable === 'vocabParallel' ? 'vocab-parallel' : 'gathered',
      qsa,
      logits,
      logitsSha256: sha256(result.values.get(prepared.outputs.logits)!),
      nextTokens,
      mtpLogitsSha256: mtpOut ? sha256(result.values.get(mtpOut.logits)!) : null,
      mtpDraftTokens: mtpOut ? Array.from(result.values.get(mtpOut.draftTokens)!.data as Int32Array) : null,
      dump: dumpTarget ? (dumpTarget.kind === 'stdout' ? '-' : resolve(opts.dump!)) : null,
      trace: opts.trace ? resolve(opts.trace) : null,
      outputSha256: sha256(h),
      mtpStateSha256: mtp ? sha256(mtp) : null,
      hcRowsPerRank,
      // --comm mpi: the bytes each rank's communicator sent; sim: core's accounting of the graph
      commBytesPerRank,
      // --comm mpi|nccl: the processes' world
      world: rank
        ? {
            library: rank.library,
            ranks: tp,
            startedBy: rank.startedBy,
            secondsPerRank: result.secondsPerRank,
            controlBytesPerRank: result.controlBytesPerRank,
            weightBytesReadPerRank: result.weightBytesReadPerRank,
          }
        : null,
      runs,
      // each run's seconds (the summary's figures are the last run's)
      runSeconds: rank ? null : runSeconds,
      // what the last run cost beyond its kernels, per process: one entry for the simulated ranks on one device, one per rank with --comm mpi|nccl
      engine: result.enginePerRank ?? null,
      // this process's GPU (rank 0's under hcsp launch): GEMM shapes hipBLASLt/cuBLASLt had no algorithm for, run on the exact kernel instead
      vendorGemmFallbacks: vendorGemmOf(backend)?.fallbacks ?? null,
      // this process's GPU: ops that ran their exact kernel although the device runs fast kernels, and why
      kernelFallbacks: (backend as Partial<RocmBackend>).gpu?.kernelFallbacks() ?? null,
      // checkpoint bytes this process read (--comm mpi|nccl: per rank in world)
      weightBytesRead: checkpoint ? checkpoint.bytesRead() : null,
      // this process's weights placed on its device when the session opened: seconds, GB/s, how many by a native loader
      weightLoad: result.stats.engine?.weightLoad ?? result.enginePerRank?.[0]?.weightLoad ?? null,
    };
    if (opts.json) return `${JSON.stringify(summary)}\n`;
    const lines = [
      `prefill ${config.name} (${stack}) on ${summary.device}${rank ? `, ${tp} ${rank.mode === 'mpi' ? 'MPI' : rank.library.split(' ')[0]} ranks (${rank.library.split(',')[0]})` : ''}: T=${tokens}, tp=${tp}, SP ${summary.sp ? `on (C=${summary.chunk} rows/rank from layer ${summary.spStartLayer})` : `off (${summary.reason})`}, reduce=${reduce}`,
      `  weights: ${summary.weights}${nonFinite.size > 0 ? ` (${nonFinite.size} tensors hold NaN/Inf)` : ''}${summary.fp8WeightLinears > 0 ? `; ${summary.fp8WeightLinears} linears as FP8 GEMMs on its FP8 weights` : ''}`,
      `  ${seconds.toFixed(3)} s, ${summary.tokensPerSecond.toFixed(1)} tokens/s`,
      `  output sha256 ${summary.outputSha256}; next token ${nextTokens.at(-1)}`,
      `  QSA: ${qsa.layers} layers, ${qsa.rowsDropping} of ${tokens} rows drop tokens, ${qsa.droppedPairs} (query, key) pairs dropped per layer`,
      `  HC rows per rank (rows each rank ran through its HC combine-norms, summed over the forward; SP divides them): ${hcRowsPerRank.join(', ')}`,
      `  sent per rank: all-reduce ${formatBytes(commBytesPerRank[0].allReduce)}, all-gather ${formatBytes(commBytesPerRank[0].allGather)}, reduce-scatter ${formatBytes(commBytesPerRank[0].reduceScatter)} (--json: bytes)`,
      ...(summary.engine ?? []).map((e, i) => engineLine(e, rank ? `rank ${i}` : tp > 1 ? `ranks 0-${tp - 1}` : 'rank 0', runs)),
      ...(summary.trace
        ? [`  trace: ${summary.trace} (a Chrome trace: open it in Perfetto's UI, ui.perfetto.dev, "Open trace file", or chrome://tracing)`]
        : []),
    ];
    return `${lines.join('\n')}\n`;
  } finally {
    checkpoint?.close();
  }
}

export function registerPrefill(program: Command): void {
  program
    .command('prefill')
    .description(
      'prefill T seeded tokens through the decoder stack on tp ranks (simulated in this process, or one process per rank with --comm mpi|nccl under hcsp launch or mpirun)',
    )
    .addOption(new Option('--backend <name>', `executor: ${backendNames().join('|')}`).default('cpu'))
    .addOption(deviceOption())
    .addOption(gemmOption())
    .addOption(kernelsOption())
    .addOption(configOption())
    .addOption(tpOption('<n>'))
    .option('--tokens <n>', 'tokens in the prefill (default 1100, or the length of --ids)')
    .option('--ids <file.json>', "a prompt's token ids: a JSON array of integers (default: seeded ids)")
    .option('--dump <file.safetensors>', 'write the golden dump (README: "Golden dumps"), gathered to all T rows; - for stdout')
    .option(
      '--trace <file.json>',
      "write the run's timeline as a Chrome trace: a track per rank, every node with its op, shapes and bytes, every collective on each rank with the bytes it sends, flows between the ranks (under hcsp launch rank 0 writes every rank's)",
    )
    .option(
      '--fp8 <format>',
      "the FP8 PTPC path on the GDN input projection, and the format of a checkpoint's own FP8 linears: e4m3fnuz (MI300/MI308X) | e4m3fn",
    )
    .option('--qsa-selection <mode>', 'replicated (every rank selects for all rows, as ATOM) | row-sharded (each rank its SP rows, all-gathered)', 'replicated')
    .option(
      '--ple-table <placement>',
      "where the PLE's n-gram table lives: vocab-parallel (each rank's slice on its device, lookups all-reduced, as ATOM; the rocm default) | gathered (rows read from the checkpoint as the ids need them, on the host: the cpu and webgpu default)",
    )
    .option('--logits <rows>', 'last (the last position) | all', 'last')
    .option('--mtp-drafter <mode>', "where the MTP head's HC work runs under SP: gathered | sharded", 'gathered')
    .option('--sp <mode>', 'auto (the production gate, see Environment) | on (force sharding) | off', 'auto')
    .option('--reduce <alg>', `reduction order of the collectives: ${REDUCE_ALGORITHMS.join('|')}`, 'ring')
    .option(
      '--comm <mode>',
      `sim (the tp ranks simulated in this process) | mpi (this process is one host rank: hcsp launch --nproc-per-node <tp> -- prefill ... --comm mpi, or under mpirun; ${rankBackendFlags('mpi')}) | nccl (one GPU rank on RCCL/NCCL: ${rankBackendFlags('nccl')}); rank 0 prints`,
      'sim',
    )
    .option(
      '--collective-timeout <s>',
      `--comm mpi|nccl: seconds a rank may wait in one collective (or control exchange) for its peers; past it the job ends, naming the call and the ranks that did not come (default: ${COLLECTIVE_TIMEOUT_ENV}, else ${DEFAULT_COLLECTIVE_TIMEOUT_S.mpi} for --comm mpi, ${DEFAULT_COLLECTIVE_TIMEOUT_S.nccl} for --comm nccl)`,
    )
    .option('--seed <n>', 'seed of the token ids and synthetic weights', '0')
    .option(
      '--runs <n>',
      `run the prepared graph n times (1 to ${MAX_RUNS}; the first fills the device's memory pool and caches); the summary is the last run's`,
      '1',
    )
    .option('--weights <path>', 'a Hugging Face model folder, its model.safetensors.index.json, or one .safetensors file (default: synthetic weights)')
    .option('--stack <kind>', 'model (the real sub-layers) | hc-only (HC steps around a stand-in row-parallel linear)', 'model')
    .option('--max-memory <size>', MAX_MEMORY_HELP)
    .option('--reject-nonfinite', 'refuse checkpoint weights holding NaN or Inf (default: warn on stderr)')
    .option('--quiet', 'no progress on stderr')
    .option('--json', 'print one JSON object')
    .addHelpText('after', SP_ENV_HELP)
    .action(async (opts: PrefillCliOptions) => {
      let summary: string;
      try {
        summary = await runPrefillCommand(opts);
      } catch (e) {
        // --comm mpi: another rank reports this failure (MPI is already finalized)
        if (e instanceof QuietRankExit) process.exit(1);
        throw e;
      }
      // With --dump - the tensors own stdout.
      (opts.dump === '-' ? process.stderr : process.stdout).write(summary);
    });
}
