// `hcsp bench --suite`'s files and stdout: the run of @hcsp/bench's suite, bench.json and the
// plot of time against T written to --out, the table (or JSON) for stdout.
import { formatSuiteReport, runSuite, type SuiteDeps, type SuiteOptions, type SuiteReport } from '@hcsp/bench';
import { checkOutputDir, writeOutputDir, type OutputDir } from '../output/outputDir.ts';
import { ResultsNotSavedError } from '../output/resultsNotSaved.ts';
import { linePlotSvg } from '../output/svgPlot.ts';
import { cliBenchHooks } from './benchHooks.ts';

/** The plot: time against T, one series per (backend, HC case) with at least one point, log-log. */
export function timeVsTPlot(r: SuiteReport): Promise<string> {
  const series: { name: string; points: [number, number][] }[] = [];
  for (const c of ['hc-mix', 'hc-combine'] as const) {
    for (const b of r.backends.filter((x) => x.status === 'available')) {
      const points = r.results
        .filter((m) => m.case === c && m.backend === b.label && m.status === 'measured')
        .map((m): [number, number] => [m.tokens, m.seconds!]);
      if (points.length) series.push({ name: `${c} ${b.label}`, points });
    }
  }
  const cfg = r.cases.find((c) => c.case === 'hc-mix')?.config ?? '';
  const ts = r.cases.filter((c) => c.case === 'hc-mix' || c.case === 'hc-combine').map((c) => c.tokens);
  return linePlotSvg({
    title: `HC mix and combine (${cfg}, one rank's rows): time against T, per backend`,
    x: {
      label: 'T (rows per rank)',
      log: true,
      integer: true,
      ...(ts.length ? { domain: [Math.min(...ts) / 1.25, Math.max(...ts) * 1.25] as [number, number] } : {}),
    },
    y: { label: 'seconds (median)', log: true },
    series,
    width: 560,
    height: 320,
    idPrefix: 'bench-time-',
  });
}

/** The files of `--out DIR`: replaced on every run (the suite's results folder). */
const SUITE_FILES = { json: 'bench.json', plot: 'time-vs-T.svg' } as const;

/** Checks `--out DIR` before any work (output/outputDir.ts); its files are replaced, links refused. */
export function checkSuiteOut(dir: string): OutputDir {
  return checkOutputDir(dir, '--out', Object.values(SUITE_FILES), { replace: true });
}

/** Writes DIR/bench.json and DIR/time-vs-T.svg (DIR created, both renamed into place together); records their paths in the report. */
export async function writeSuiteFiles(r: SuiteReport, out: OutputDir): Promise<void> {
  r.files = { json: out.files.get(SUITE_FILES.json)!.path, plot: out.files.get(SUITE_FILES.plot)!.path };
  const plot = await timeVsTPlot(r);
  await writeOutputDir(
    out,
    new Map([
      [SUITE_FILES.plot, [Buffer.from(plot, 'utf8')]],
      [SUITE_FILES.json, [Buffer.from(`${JSON.stringify(r, null, 1)}\n`, 'utf8')]],
    ]),
  );
}

/**
 * The suite end to end: --out checked, run, the files written, and the text for stdout (JSON
 * with --json). Files that cannot be written at the end: ResultsNotSavedError, with the text.
 */
export async function suiteCommand(opts: SuiteOptions, deps: SuiteDeps = {}): Promise<{ report: SuiteReport; stdout: string }> {
  const out = opts.outDir === null ? null : checkSuiteOut(opts.outDir);
  const report = await runSuite(opts, { hooks: cliBenchHooks(opts.maxMemory), ...deps });
  if (out === null) return { report, stdout: format(report, opts) };
  try {
    await writeSuiteFiles(report, out);
  } catch (e) {
    throw new ResultsNotSavedError((e as Error).message, format(report, opts));
  }
  return { report, stdout: format(report, opts) };
}

function format(report: SuiteReport, opts: SuiteOptions): string {
  return opts.json ? `${JSON.stringify(report)}\n` : formatSuiteReport(report);
}
