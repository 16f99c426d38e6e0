import cliProgress from 'cli-progress';

/**
 * A progress bar on stderr for node-by-node work, shown only on a terminal and only once
 * the work has run for a second (short runs print nothing extra).
 */
export function nodeProgress(label: string): { onNode: (done: number, total: number) => void; stop: () => void } {
  const start = performance.now();
  let bar: cliProgress.SingleBar | null = null;
  return {
    onNode(done, total) {
      if (!process.stderr.isTTY) return;
      if (!bar) {
        if (performance.now() - start < 1000) return;
        bar = new cliProgress.SingleBar({ format: `${label} [{bar}] {percentage}% | {value}/{total} ops | {duration_formatted}`, stream: process.stderr, synchronousUpdate: true }, cliProgress.Presets.shades_classic);
        bar.start(total, done);
      }
      bar.update(done);
    },
    stop() {
      bar?.stop();
    },
  };
}
