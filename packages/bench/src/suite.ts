// `hcsp bench --suite` (the root `npm run bench`): one suite over every backend this machine
// has, side by side in one run. Cases: the full-dimension HC mix and the unfused HC combine
// (flash-next widths, one rank's rows) at T = 1024, 4096, 16384; one decoder layer of the small
// config; a prefill of the small config at tp 4. Per case: time, GFLOP/s, GB/s over the fewest
// bytes the case must move, and the ratios to this machine's ceilings measured in the same run
// (a large copy for the bandwidth; numpy's fp32 GEMM, else the best backend GEMM, for the matrix
// rate). Scale: peak RSS, and time(T)/time(T0) / (T/T0). Results as JSON (a file and --json), a
// table, and an SVG of time against T per backend.
//
// A size that a backend could not run within the per-case budget (predicted from its smaller
// size, linearly in T) is listed as not measured, with the prediction: nothing is skipped
// silently. A backend that cannot start (no GPU, no native addon) is listed with the reason.
import { createHash } from 'node:crypto';
import { cpus, loadavg } from 'node:os';
import type { RocmBackend } from '@hcsp/backend-rocm';
import { createBackend } from '@hcsp/backends';
import type { Backend, PreparedGraph, RunResult, ValueId } from '@hcsp/core';
import { collectGarbage } from './collectGarbage.ts';
import { NO_HOOKS, type BenchHooks } from './hooks.ts';
import { SUITE_BACKENDS, isSoftwareAdapter, type SuiteBackend } from './suiteBackends.ts';
import { suiteCases, type CaseGraph, type CaseName, type CaseSpec } from './suiteCases.ts';
import { gpuCeilings, machineCeilings, type SuiteCeilings } from './suiteCeilings.ts';
import type { SuiteOptions } from './suiteOptions.ts';
import { median } from './timing.ts';

export type MeasureStatus = 'measured' | 'not measured' | 'failed';

export interface Measurement {
  case: CaseName;
  tokens: number;
  backend: string;
  status: MeasureStatus;
  /** why not measured, or the error */
  reason: string | null;
  /** median of the timed runs; the first run's time when none fitted the budget (firstRunOnly) */
  seconds: number | null;
  runs: number[];
  firstRunSeconds: number | null;
  firstRunOnly: boolean;
  prepareSeconds: number | null;
  gflop: number;
  gbytes: number;
  gflops: number | null;
  gbps: number | null;
  /** GFLOP/s over the matrix ceiling */
  overMatrix: number | null;
  /** GB/s over the bandwidth ceiling */
  overBandwidth: number | null;
  /** the roofline bound max(flops / matrix, bytes / bandwidth) over the time (1: at the bound) */
  ofRoofline: number | null;
  /** this process's RSS: before, and its peak during prepare and the runs */
  rssBeforeBytes: number | null;
  rssPeakBytes: number | null;
  /** true: getrusage's maxRSS rose (exact); false: the highest of samples every 5 ms */
  rssPeakExact: boolean | null;
  /** sha256 of the outputs of the last run (every graph output and kept value, in order) */
  outputSha256: string | null;
  /** same bits as the cpu reference at this case (null: the cpu reference did not measure it) */
  sameAsCpu: boolean | null;
  load: number;
}

function outputsSha(result: RunResult, ids: readonly ValueId[]): string {
  const h = createHash('sha256');
  for (const id of ids) {
    const t = result.values.get(id);
    if (!t) throw new Error(`output '${id}' is missing from the result`);
    h.update(new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength));
  }
  return h.digest('hex');
}

export interface SuiteBackendReport {
  label: string;
  status: 'available' | 'unavailable' | 'left out';
  /** describe() when available, else why not */
  detail: string;
  ceilings: 'machine' | 'gpu' | 'none';
  ceilingsNote: string;
  gpuCeilings: SuiteCeilings | null;
}

export interface ScaleRow {
  case: CaseName;
  backend: string;
  base: number;
  points: { tokens: number; seconds: number | null; ratio: number | null; note: string | null }[];
}

export interface SuiteReport {
  suite: 'hcsp bench --suite';
  date: string;
  quick: boolean;
  machine: { cpus: number; model: string; node: string };
  loadStart: number[];
  loadEnd: number[];
  budgetSeconds: number;
  reps: number;
  cpuReps: number;
  ceilings: SuiteCeilings;
  backends: SuiteBackendReport[];
  cases: { case: CaseName; tokens: number; tp: number; config: string; what: string; detail: string; gflop: number; gbytes: number }[];
  results: Measurement[];
  scale: ScaleRow[];
  /** this process's peak RSS over the whole run (getrusage maxRSS) */
  peakRssBytes: number;
  counted: Record<string, string>;
  files: { json: string | null; plot: string | null };
}

interface OpenBackend {
  spec: SuiteBackend;
  backend: Backend;
  ceilings: SuiteCeilings | null;
  reps: number;
}

export interface SuiteDeps {
  say?: (line: string) => void;
  /** the machine's ceilings (tests may pass their own) */
  ceilings?: SuiteCeilings;
  /** interruption and the memory guard (default: none) */
  hooks?: BenchHooks;
}

export async function runSuite(opts: SuiteOptions, deps: SuiteDeps = {}): Promise<SuiteReport> {
  const say = deps.say ?? ((line: string): void => void (opts.quiet ? 0 : process.stderr.write(`bench: ${line}\n`)));
  const hooks = deps.hooks ?? NO_HOOKS;
  const loadStart = loadavg();
  const wanted = new Set(opts.backends ?? SUITE_BACKENDS.map((b) => b.label));
  const ceilings = deps.ceilings ?? (await machineCeilings(opts, say));

  // every backend started (a GPU's ceilings measured on it), before any case runs
  const open: OpenBackend[] = [];
  const backends: SuiteBackendReport[] = [];
  for (const spec of SUITE_BACKENDS) {
    if (!wanted.has(spec.label)) {
      backends.push({
        label: spec.label,
        status: 'left out',
        detail: 'not asked for (--backends, --no-webgpu, --no-host)',
        ceilings: 'none',
        ceilingsNote: '',
        gpuCeilings: null,
      });
      continue;
    }
    say(`starting ${spec.label}`);
    let backend: Backend;
    try {
      backend = await hooks.onDevice(() => createBackend(spec.name, spec.options));
    } catch (e) {
      const why = (e as Error).message;
      const addonHint = /native addon|hcsp_native\.node/i.test(why) && !why.includes('npm run build:native') ? ' (build it with `npm run build:native`)' : '';
      backends.push({ label: spec.label, status: 'unavailable', detail: `${why}${addonHint}`, ceilings: 'none', ceilingsNote: '', gpuCeilings: null });
      say(`${spec.label} unavailable: ${why}`);
      continue;
    }
    const describe = backend.describe();
    let own: SuiteCeilings | null = ceilings;
    let ceilingsNote = "this machine's (the CPUs run it)";
    let gpu: SuiteCeilings | null = null;
    if (spec.ceilings === 'gpu') {
      say(`${spec.label}: the GPU's GEMM and copy ceilings`);
      gpu = await gpuCeilings(backend as RocmBackend, 4096, opts.copyBytes);
      own = gpu;
      ceilingsNote = "the GPU's own, measured on it";
    } else if (spec.ceilings === 'adapter' && !isSoftwareAdapter(describe)) {
      own = null;
      ceilingsNote = 'none: a hardware WebGPU adapter, whose GEMM and bandwidth ceilings this suite does not measure';
    } else if (spec.ceilings === 'adapter') {
      ceilingsNote = "this machine's (a software adapter: the CPUs run it)";
    }
    backends.push({
      label: spec.label,
      status: 'available',
      detail: describe,
      ceilings: own === null ? 'none' : spec.ceilings === 'gpu' ? 'gpu' : 'machine',
      ceilingsNote,
      gpuCeilings: gpu,
    });
    open.push({ spec, backend, ceilings: own, reps: spec.name === 'cpu' ? opts.cpuReps : opts.reps });
  }

  const overLimit = hooks.memory.graphLimit();
  const results: Measurement[] = [];
  const caseRows: SuiteReport['cases'] = [];
  try {
    for (const spec of suiteCases(opts)) {
      say(`${spec.case} T=${spec.tokens}: building the graph and inputs`);
      let cg: CaseGraph | null = spec.build();
      const overMemory = overLimit(cg.graph, cg.specs);
      caseRows.push({
        case: spec.case,
        tokens: spec.tokens,
        tp: spec.tp,
        config: spec.config,
        what: spec.what,
        detail: cg.detail,
        gflop: cg.flops / 1e9,
        gbytes: cg.bytes / 1e9,
      });
      let cpuSha: string | null = null;
      for (const ob of open) {
        const base: Measurement = {
          case: spec.case,
          tokens: spec.tokens,
          backend: ob.spec.label,
          status: 'not measured',
          reason: null,
          seconds: null,
          runs: [],
          firstRunSeconds: null,
          firstRunOnly: false,
          prepareSeconds: null,
          gflop: cg.flops / 1e9,
          gbytes: cg.bytes / 1e9,
          gflops: null,
          gbps: null,
          overMatrix: null,
          overBandwidth: null,
          ofRoofline: null,
          rssBeforeBytes: null,
          rssPeakBytes: null,
          rssPeakExact: null,
          outputSha256: null,
          sameAsCpu: null,
          load: loadavg()[0],
        };
        const skip = whyNotRun(results, spec, ob.spec.label, opts.budgetSeconds);
        if (skip) {
          results.push({ ...base, reason: skip });
          say(`${spec.case} T=${spec.tokens} ${ob.spec.label}: not measured: ${skip}`);
          continue;
        }
        if (overMemory !== null) {
          results.push({ ...base, reason: overMemory });
          continue;
        }
        say(`${spec.case} T=${spec.tokens} ${ob.spec.label}: prepare, a first run, then up to ${ob.reps} timed within ${opts.budgetSeconds} s`);
        const m = await measure(ob, cg, opts.budgetSeconds, hooks);
        const row: Measurement = { ...base, ...m, load: loadavg()[0] };
        if (row.status === 'measured' && row.seconds !== null) {
          row.gflops = cg.flops > 0 ? cg.flops / row.seconds / 1e9 : null;
          row.gbps = cg.bytes / row.seconds / 1e9;
          const c = ob.ceilings;
          if (c) {
            row.overMatrix = row.gflops !== null && c.matrixGflops ? row.gflops / c.matrixGflops : null;
            row.overBandwidth = c.bandwidthGBps ? row.gbps / c.bandwidthGBps : null;
            if (c.bandwidthGBps && (c.matrixGflops || cg.flops === 0)) {
              const bound = Math.max(cg.flops > 0 ? cg.flops / (c.matrixGflops! * 1e9) : 0, cg.bytes / (c.bandwidthGBps * 1e9));
              row.ofRoofline = bound / row.seconds;
            }
          }
          if (ob.spec.name === 'cpu') cpuSha = row.outputSha256;
          say(
            `${spec.case} T=${spec.tokens} ${ob.spec.label}: ${row.seconds.toFixed(4)} s (${row.runs.map((s) => s.toFixed(4)).join(' ') || `first run only`})`,
          );
        } else {
          say(`${spec.case} T=${spec.tokens} ${ob.spec.label}: ${row.status}: ${row.reason}`);
        }
        results.push(row);
      }
      for (const r of results)
        if (r.case === spec.case && r.tokens === spec.tokens && r.outputSha256 !== null && cpuSha !== null) r.sameAsCpu = r.outputSha256 === cpuSha;
      cg = null;
    }
  } finally {
    for (const ob of open) await ob.backend.dispose();
  }

  const report: SuiteReport = {
    suite: 'hcsp bench --suite',
    date: new Date().toISOString(),
    quick: opts.quick,
    machine: { cpus: cpus().length, model: cpus()[0]?.model ?? '?', node: process.version },
    loadStart,
    loadEnd: loadavg(),
    budgetSeconds: opts.budgetSeconds,
    reps: opts.reps,
    cpuReps: opts.cpuReps,
    ceilings,
    backends,
    cases: caseRows,
    results,
    scale: scaleRows(results, opts.tokens),
    peakRssBytes: process.resourceUsage().maxRSS * 1024,
    counted: COUNTED,
    files: { json: null, plot: null },
  };
  return report;
}

export const COUNTED: Record<string, string> = {
  time: 'wall time of prepared.run (inputs uploaded, every node, outputs read back), median of the timed runs after a first untimed run; weights uploaded once at prepare, untimed. When not one timed run fits the per-case budget after the first, the first run is the figure (marked "first run only")',
  flops:
    'GEMMs only: 2*T*K*O per linear node; moeExperts at the expected routed work 2*rows*topK*(local/experts)*3*I*H. Attention, GatedDeltaNet, norms and elementwise ops are not counted (the layer and prefill GFLOP/s understate their arithmetic); the HC combine has no GEMM',
  bytes:
    'the fewest the case must move: graph inputs read once, every weight value once, every output (and kept value) written once, at storage size; intermediates assumed to stay on chip. All ranks of a tp > 1 case together',
  ratios:
    "x matrix = GFLOP/s / the matrix ceiling; x bw = GB/s / the bandwidth ceiling; of roofline = max(flops / matrix ceiling, bytes / bandwidth) / time (1.00: at the bound). The ceilings are this machine's for the CPU-run backends (a software WebGPU adapter included), a GPU's own for rocm on hip/cuda",
  budget:
    'a (backend, case, T) is not run when its run time predicted from the largest smaller T it ran (linear in T) is over the budget; the prediction is printed',
  rss: "this process's RSS during prepare and the runs of one measurement: peak (getrusage maxRSS when it rose, else 5 ms samples) and before; a WebGPU device process (Chromium) is not included",
  scale: '(time(T) / time(T0)) / (T / T0), T0 the first HC size; 1.00 is time proportional to T',
};

/** Why (backend, case, T) is not run: a smaller T of it failed or was not run, or its predicted run time is over the budget. */
export function whyNotRun(results: readonly Measurement[], spec: CaseSpec, backend: string, budget: number): string | null {
  if (!spec.scaled) return null;
  const earlier = results.filter((r) => r.backend === backend && r.case === spec.case && r.tokens < spec.tokens);
  const prev = earlier.at(-1);
  if (!prev) return null;
  if (prev.status !== 'measured') return `T=${prev.tokens} was ${prev.status === 'failed' ? 'failed' : 'not measured'}`;
  const predicted = prev.seconds! * (spec.tokens / prev.tokens);
  if (predicted > budget)
    return `a run would take about ${predicted.toFixed(1)} s (T=${prev.tokens}: ${prev.seconds!.toFixed(2)} s, x${(spec.tokens / prev.tokens).toFixed(0)}), over the ${budget} s budget per case`;
  return null;
}

async function measure(ob: OpenBackend, cg: CaseGraph, budget: number, hooks: BenchHooks): Promise<Partial<Measurement>> {
  collectGarbage();
  const rssBefore = process.memoryUsage.rss();
  const maxBefore = process.resourceUsage().maxRSS * 1024;
  let sampled = rssBefore;
  const timer = setInterval(() => {
    sampled = Math.max(sampled, process.memoryUsage.rss());
  }, 5);
  const onDevice = <T>(work: () => Promise<T>): Promise<T> => (ob.spec.name === 'cpu' ? work() : hooks.onDevice(work));
  let prepared: PreparedGraph | null = null;
  try {
    const t0 = performance.now();
    prepared = await onDevice(() => ob.backend.prepare(cg.graph, cg.weights));
    const prepareSeconds = (performance.now() - t0) / 1000;
    const runOnce = async (): Promise<[number, RunResult]> => {
      const t = performance.now();
      const r = await onDevice(() => prepared!.run(cg.feeds, { keep: cg.keep }));
      return [(performance.now() - t) / 1000, r];
    };
    let [first, last] = await runOnce();
    let spent = prepareSeconds + first;
    const runs: number[] = [];
    while (runs.length < ob.reps && spent + (runs.at(-1) ?? first) <= budget) {
      const [s, r] = await runOnce();
      runs.push(s);
      last = r;
      spent += s;
    }
    const ids = [...new Set([...cg.graph.outputs, ...cg.keep])];
    const sha = outputsSha(last, ids);
    return {
      status: 'measured',
      seconds: runs.length ? median(runs) : first,
      runs,
      firstRunSeconds: first,
      firstRunOnly: runs.length === 0,
      prepareSeconds,
      outputSha256: sha,
      ...rss(),
    };
  } catch (e) {
    return { status: 'failed', reason: (e as Error).message, ...rss() };
  } finally {
    clearInterval(timer);
    if (prepared) await prepared.dispose().catch(() => {});
  }
  function rss(): Partial<Measurement> {
    sampled = Math.max(sampled, process.memoryUsage.rss());
    const maxAfter = process.resourceUsage().maxRSS * 1024;
    const exact = maxAfter > maxBefore;
    return { rssBeforeBytes: rssBefore, rssPeakBytes: exact ? Math.max(maxAfter, sampled) : sampled, rssPeakExact: exact };
  }
}

export function scaleRows(results: readonly Measurement[], tokens: readonly number[]): ScaleRow[] {
  const rows: ScaleRow[] = [];
  const base = tokens[0];
  for (const c of ['hc-mix', 'hc-combine'] as const) {
    const labels = [...new Set(results.filter((r) => r.case === c).map((r) => r.backend))];
    for (const backend of labels) {
      const at = (T: number) => results.find((r) => r.case === c && r.backend === backend && r.tokens === T);
      const b = at(base);
      const t0 = b?.status === 'measured' ? b.seconds! : null;
      rows.push({
        case: c,
        backend,
        base,
        points: tokens.map((T) => {
          const r = at(T);
          const s = r?.status === 'measured' ? r.seconds! : null;
          const note = s === null ? `not measured${r?.reason ? `: ${r.reason}` : ''}` : t0 === null ? `T=${base} not measured` : null;
          return { tokens: T, seconds: s, ratio: s !== null && t0 !== null ? s / t0 / (T / base) : null, note };
        }),
      });
    }
  }
  return rows;
}
