import cliProgress from 'cli-progress';

export interface ProgressOptions {
  /** print nothing (--quiet) */
  quiet?: boolean;
  /** where to draw (default process.stderr) */
  stream?: NodeJS.WritableStream & { isTTY?: boolean };
  /** milliseconds since some origin (default performance.now) */
  now?: () => number;
}

/** Nothing is drawn for work shorter than this. */
const START_AFTER_MS = 1000;
/** Off a terminal, at most one line per this long: logs stay readable. */
export const LOG_LINE_INTERVAL_MS = 10_000;

function seconds(ms: number): string {
  const s = Math.round(ms / 1000);
  return s < 60 ? `${s} s` : `${Math.floor(s / 60)} min ${s % 60} s`;
}

/**
 * Progress of node-by-node work on stderr, once the work has run for a second (short runs
 * print nothing extra): a bar on a terminal; elsewhere (logs, CI) one line at most every
 * LOG_LINE_INTERVAL_MS, and a last line when it ends.
 */
export function nodeProgress(label: string, options: ProgressOptions = {}): { onNode: (done: number, total: number) => void; stop: () => void } {
  const stream = options.stream ?? process.stderr;
  const now = options.now ?? (() => performance.now());
  const start = now();
  if (options.quiet) return { onNode: () => {}, stop: () => {} };
  let bar: cliProgress.SingleBar | null = null;
  let lastLine = start;
  let last: [number, number] | null = null;
  let printed = false;
  const line = (done: number, total: number, at: number): void => {
    const pct = total > 0 ? ((100 * done) / total).toFixed(1) : '100.0';
    stream.write(`hcsp: ${label}: ${done}/${total} ops (${pct}%), ${seconds(at - start)}\n`);
    lastLine = at;
    printed = true;
  };
  return {
    onNode(done, total) {
      last = [done, total];
      const at = now();
      if (at - start < START_AFTER_MS) return;
      if (stream.isTTY) {
        if (!bar) {
          bar = new cliProgress.SingleBar(
            { format: `${label} [{bar}] {percentage}% | {value}/{total} ops | {duration_formatted}`, stream, synchronousUpdate: true },
            cliProgress.Presets.shades_classic,
          );
          bar.start(total, done);
        }
        bar.update(done);
      } else if (!printed || at - lastLine >= LOG_LINE_INTERVAL_MS) {
        line(done, total, at);
      }
    },
    stop() {
      bar?.stop();
      if (printed && last) line(last[0], last[1], now());
    },
  };
}
