// What the benchmarks take from the program that runs them (the hcsp command): progress
// display, interruption of device work, and the memory guard. Each has a default that does
// nothing, for tests and scripts.
import type { Graph, WeightSpec } from '@hcsp/core';
import type { LiveBytes } from './graphCost.ts';

export interface NodeProgress {
  onNode: (done: number, total: number) => void;
  stop: () => void;
}

/** The memory guard: each check throws (or names the reason) before anything is allocated. */
export interface BenchMemoryGuard {
  /** throws when running `graph` once with synthetic weights from `specs`, with `heldBytes` more held, needs more than the limit */
  checkGraph(what: string, graph: Graph, specs: readonly WeightSpec[], heldBytes: number): void;
  /** throws when the bytes that must be live plus `extraBytes` (and the runtime's own) need more than the limit */
  checkLive(what: string, live: LiveBytes, extraBytes: number): void;
  /** the limit, taken now; then, per graph, why it is over the limit (null: it fits) */
  graphLimit(): (graph: Graph, specs: readonly WeightSpec[]) => string | null;
}

export interface BenchHooks {
  /** progress of node-by-node work, labelled (nothing drawn when `quiet`) */
  progress(label: string, quiet: boolean): NodeProgress;
  /** device work, run so that a signal during it is reported as an interruption */
  onDevice<T>(work: () => Promise<T>): Promise<T>;
  memory: BenchMemoryGuard;
}

export const NO_HOOKS: BenchHooks = {
  progress: () => ({ onNode: () => {}, stop: () => {} }),
  onDevice: (work) => work(),
  memory: { checkGraph: () => {}, checkLive: () => {}, graphLimit: () => () => null },
};
