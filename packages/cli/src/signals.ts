// Interruption: while cleanups are registered, SIGINT, SIGTERM and SIGHUP run them, print
// "hcsp: interrupted by SIGINT" and exit with 128 + the signal's number (130, 143, 129).
// With none registered the default action stays: a long synchronous computation (the CPU
// reference) could not run a JS handler before it finished, so Ctrl-C must stay immediate
// there, and it has nothing to clean up.
import { constants } from 'node:os';

const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
const cleanups = new Set<() => void>();

function onSignal(signal: NodeJS.Signals): void {
  for (const cleanup of [...cleanups].reverse()) {
    try {
      cleanup();
    } catch {
      // the others still run; the exit status says what happened
    }
  }
  cleanups.clear();
  for (const s of SIGNALS) process.off(s, onSignal);
  process.stderr.write(`hcsp: interrupted by ${signal}\n`);
  process.exit(128 + constants.signals[signal]);
}

/** Registers a synchronous cleanup for an interruption; returns its release. */
export function onInterrupt(cleanup: () => void): () => void {
  if (cleanups.size === 0) for (const s of SIGNALS) process.on(s, onSignal);
  cleanups.add(cleanup);
  return () => {
    if (!cleanups.delete(cleanup) || cleanups.size > 0) return;
    for (const s of SIGNALS) process.off(s, onSignal);
  };
}

/** Runs asynchronous `work` so that a signal during it is reported as an interruption. */
export async function interruptible<T>(work: () => Promise<T>, cleanup: () => void = () => {}): Promise<T> {
  const release = onInterrupt(cleanup);
  try {
    return await work();
  } finally {
    release();
  }
}
