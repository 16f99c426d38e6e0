// Which backends run a rank's part with which communicator: read from the backend list, where
// each entry declares the communicators it takes and the options each needs
// (@hcsp/backends: BackendEntry.comm). No backend is named here.
import { BACKENDS, type BackendEntry } from '@hcsp/backends';
import type { RankCommMode } from './communicators.ts';

/** The backends whose prepare takes `mode`'s communicator (core's GraphSession options), in the list's order. */
export function rankBackends(mode: RankCommMode, list: readonly BackendEntry[] = BACKENDS): BackendEntry[] {
  return list.filter((b) => b.comm?.[mode] !== undefined);
}

/** "rocm with --device hip or cuda": the backend and the option values `mode` needs of it ('' when none) */
function needs(entry: BackendEntry, mode: RankCommMode, joiner: string): string {
  const options = Object.entries(entry.comm?.[mode] ?? {});
  return options.map(([k, vs]) => `${joiner}--${k} ${vs.join(' or ')}`).join('');
}

/** "--backend rocm --device hip or cuda": how to ask for a backend that runs `mode`, as flags */
export function rankBackendFlags(mode: RankCommMode): string {
  return rankBackends(mode)
    .map((b) => `--backend ${b.name}${needs(b, mode, ' ')}`)
    .join(' or ');
}

/** Checks that a backend can run a rank's part with `mode`'s communicator (the list declares it can). */
export function checkRankBackend(name: string, mode: RankCommMode, list: readonly BackendEntry[] = BACKENDS): void {
  const able = rankBackends(mode, list);
  if (able.some((b) => b.name === name)) return;
  const on = able.map((b) => `${b.name}${needs(b, mode, ' with ')}`).join(' or ');
  throw new Error(`--comm ${mode} runs a rank's part on --backend ${on}, not --backend ${name}`);
}
