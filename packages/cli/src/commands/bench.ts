// `hcsp bench`: a thin command over @hcsp/bench. With --suite (the root `npm run bench`) the
// suite over every backend; without, the HC mix bench on WebGPU and the CPU reference and the
// host device's bench. Here: the options, the progress bar, signals, the memory guard (the
// hooks lent to the benchmarks) and the suite's output folder.
import type { Command } from 'commander';
import { formatBenchReport, formatHostBenchReport, runBench, runHostBench, SUITE_BACKENDS, type BenchReport, type HostBenchReport } from '@hcsp/bench';
import { MAX_MEMORY_HELP } from '../guards/memoryGuard.ts';
import { printResultsOnSaveFailure } from '../output/resultsNotSaved.ts';
import {
  HOST_DEFAULTS,
  parseBenchOptions,
  parseHostBenchOptions,
  parseSuiteOptions,
  SUITE_DEFAULTS,
  type BenchCliOptions,
  type HostBenchCliOptions,
  type SuiteCliOptions,
} from './benchOptions.ts';
import { cliBenchHooks } from './benchHooks.ts';
import { suiteCommand } from './benchSuiteFiles.ts';

/** Options of the single-purpose bench that the suite has no use for: refused with --suite when given. */
export const NOT_IN_SUITE: Readonly<Record<string, string>> = {
  hostReps: '--host-reps (the suite takes --reps for every backend but the cpu reference, --cpu-reps for it)',
  linearity: '--linearity / --no-linearity (the suite reports the scale of every backend over --tokens)',
  prefillReps: '--prefill-reps (the suite takes --reps)',
  exactTokens: '--exact-tokens (the suite compares every output with the cpu reference at each case it measured)',
};

/** The option names of `cmd` set by the user (not defaults). */
function givenOptions(cmd: Command): (key: string) => boolean {
  return (key) => {
    const source = cmd.getOptionValueSource(key);
    return source !== undefined && source !== 'default';
  };
}

export function registerBench(program: Command): void {
  program
    .command('bench')
    .description(
      'with --suite (npm run bench): every backend on this machine side by side (HC mix and combine at T 1024/4096/16384, a small decoder layer, a small tp-4 prefill) against the ceilings measured in the same run, as a table, JSON and a plot. ' +
        'Without: the full-dimension HC mix (flash-next, tp 1) on WebGPU and the CPU reference against the fp32 GEMM ceiling, and the native host device (HC mix, its GEMMs, an HC-only prefill) against the GEMM ceiling and the memory bandwidth',
    )
    .option(
      '--suite',
      `the benchmark suite over every backend (${SUITE_BACKENDS.map((b) => b.label).join(', ')}); --tokens (default ${SUITE_DEFAULTS.tokens}), --reps, --cpu-reps, --seed, --max-memory, --prefill-tokens (default ${SUITE_DEFAULTS.prefillTokens}), --no-prefill, --no-webgpu (webgpu and cpu), --no-host (rocm on the host), --json and --quiet apply to it`,
    )
    .option('--quick', 'with --suite: the tiny config at tiny sizes (a check of the suite, not a benchmark)')
    .option(
      '--budget <seconds>',
      `with --suite: the most one backend may spend on one case at one T (a larger T predicted to exceed it is not run, and says so)`,
      SUITE_DEFAULTS.budget,
    )
    .option('--backends <list>', 'with --suite: comma-separated backend labels to run (default: all)')
    .option('--layer-tokens <n>', 'with --suite: T of the decoder-layer case', SUITE_DEFAULTS.layerTokens)
    .option(
      '--out <dir>',
      "with --suite: where bench.json and time-vs-T.svg go, replaced on each run ('' for none; checked before the run, symbolic links refused)",
      SUITE_DEFAULTS.out,
    )
    .option('--tokens <list>', 'comma-separated token counts', '1024,4096')
    .option('--reps <n>', 'timed WebGPU runs per token count (median reported)', '3')
    .option('--cpu-reps <n>', 'timed CPU-reference runs per token count (median reported)', '1')
    .option('--seed <n>', 'seed of the input streams and synthetic weights', '0')
    .option('--max-memory <size>', MAX_MEMORY_HELP)
    .option('--no-webgpu', 'leave out the WebGPU and CPU-reference timings')
    .option('--no-host', 'leave out the native host device (rocm, device host)')
    .option('--host-reps <n>', 'timed host-device runs per measurement (median reported)', HOST_DEFAULTS.reps)
    .option('--linearity <list>', "token counts of the host HC mix's linearity series, the first the base", HOST_DEFAULTS.linearity)
    .option('--no-linearity', 'leave out the linearity series')
    .option('--prefill-tokens <n>', 'T of the host HC-only flash-next prefill at tp 4 (full depth)', HOST_DEFAULTS.prefillTokens)
    .option('--no-prefill', 'leave out the host prefill')
    .option('--prefill-reps <n>', 'timed host prefill runs (median reported)', HOST_DEFAULTS.prefillReps)
    .option('--exact-tokens <n>', 'T at which the host HC mix is checked bit for bit against the CPU reference', HOST_DEFAULTS.exactTokens)
    .option('--quiet', 'no progress on stderr')
    .option('--json', 'print one JSON object')
    .action(async (raw: BenchCliOptions & HostBenchCliOptions & SuiteCliOptions & { webgpu?: boolean; suite?: boolean }, cmd: Command) => {
      const given = givenOptions(cmd);
      if (raw.suite) {
        for (const [key, text] of Object.entries(NOT_IN_SUITE)) if (given(key)) throw new Error(`bench --suite: ${text}`);
        const opts = parseSuiteOptions(raw, (key) => given(key));
        const { stdout } = await printResultsOnSaveFailure(() => suiteCommand(opts));
        process.stdout.write(stdout);
        return;
      }
      for (const key of ['quick', 'budget', 'backends', 'layerTokens', 'out'])
        if (given(key)) throw new Error(`bench: --${key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)} belongs to --suite`);
      const opts = parseBenchOptions(raw);
      const hostOpts = parseHostBenchOptions(raw);
      // the host device first: its memory peaks are then not hidden by the cpu reference's
      const host: HostBenchReport | null = hostOpts ? await runHostBench(hostOpts, { hooks: cliBenchHooks(hostOpts.maxMemory) }) : null;
      let report: BenchReport | null = null;
      try {
        if (raw.webgpu !== false) report = await runBench(opts, cliBenchHooks(opts.maxMemory));
      } catch (e) {
        if (host) process.stdout.write(opts.json ? `${JSON.stringify({ host })}\n` : formatHostBenchReport(host));
        throw e;
      }
      if (opts.json) process.stdout.write(`${JSON.stringify({ ...(report ?? {}), ...(host ? { host } : {}) })}\n`);
      else process.stdout.write([report ? formatBenchReport(report) : '', host ? formatHostBenchReport(host) : ''].filter(Boolean).join('\n'));
      const bad = report?.rows.find((row) => !row.bitExact);
      if (bad) throw new Error(`T=${bad.tokens}: webgpu output differs from the cpu reference: ${bad.mismatch}`);
      if (host && !host.check.bitExact)
        throw new Error(`T=${host.check.tokens}: the host device's HC mix differs from the cpu reference: ${host.check.mismatch}`);
    });
}
