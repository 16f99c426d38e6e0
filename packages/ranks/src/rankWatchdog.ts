// A rank's collective watchdog (backend-rocm's CollectiveWatchdog) in a job of separately
// started ranks: its limit (--collective-timeout, HCSP_COLLECTIVE_TIMEOUT), and what it does
// when one of this rank's calls that meet the peers exceeds it, as NCCL's watchdog with
// TORCH_NCCL_ASYNC_ERROR_HANDLING does: say which call and for how long; under hcsp launch
// ask every rank through the rendezvous store where it is, so that the message names the
// ranks that did not answer (stopped, or hung) and those that have not reached the call; end
// the job through the store (every rank ends, with this message); then end this process at
// once (a worker blocked in MPI or NCCL would hold a normal exit forever). Under mpirun the
// process ends, and mpirun ends the job.
import { CollectiveWatchdog, type StuckCall, type WatchedState } from '@hcsp/backend-rocm';
import { COMMUNICATORS, type RankCommMode } from './communicators.ts';
import { parseSeconds } from './seconds.ts';
import type { RendezvousClient } from './rendezvousStore.ts';

/** each communicator's default collective timeout in seconds (communicators.ts says why these) */
export const DEFAULT_COLLECTIVE_TIMEOUT_S = Object.fromEntries(COMMUNICATORS.map((c) => [c.mode, c.defaultTimeoutS])) as Record<RankCommMode, number>;
export const COLLECTIVE_TIMEOUT_ENV = 'HCSP_COLLECTIVE_TIMEOUT';
/** how long a stuck rank waits for the others to say where they are */
export const ASK_MS = 2000;
/** a timer later than this did not fire on time: this process's own event loop was held */
const LATE_MS = 1000;

const ASK_KEY = 'watchdog/ask';
const answerKey = (rank: number) => `watchdog/answer/${rank}`;

/** The watchdog's limit in ms for --comm `mode`: --collective-timeout, else HCSP_COLLECTIVE_TIMEOUT, else the default; a bad value is an error naming it. */
export function collectiveTimeoutMs(mode: RankCommMode, option: string | undefined, env: Record<string, string | undefined> = process.env): number {
  if (option !== undefined) return parseSeconds(option, '--collective-timeout');
  const v = env[COLLECTIVE_TIMEOUT_ENV];
  if (v !== undefined) return parseSeconds(v, COLLECTIVE_TIMEOUT_ENV);
  return DEFAULT_COLLECTIVE_TIMEOUT_S[mode] * 1000;
}

const secondsText = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const ranksText = (ranks: number[]) => `rank${ranks.length > 1 ? 's' : ''} ${ranks.join(', ')}`;

/** a peer's answer, as it said it: where it is, or null before its first call; undefined when unreadable */
function parseAnswer(value: string): WatchedState | null | undefined {
  try {
    const s: unknown = JSON.parse(value);
    if (s === null) return null;
    const { what, inCall, ms } = s as Record<string, unknown>;
    return typeof what === 'string' && typeof inCall === 'boolean' && typeof ms === 'number' ? { what, inCall, ms } : undefined;
  } catch {
    return undefined;
  }
}

function whereIs(s: WatchedState | null): string {
  if (s === null) return 'before its first collective';
  return s.inCall ? `waiting ${secondsText(s.ms)} in ${s.what}` : `between collectives, ${secondsText(s.ms)} after ${s.what}`;
}

/**
 * What the answers say about a call stuck on rank `self` of `size`: the ranks that did not
 * answer (stopped or hung), those elsewhere (not arrived), those waiting in it too.
 */
export function describeAnswers(self: number, size: number, stuck: StuckCall, answers: ReadonlyMap<number, string>): string {
  const asked = `within ${ASK_MS / 1000} s`;
  // this rank's own answer travels through the store too: none means the store is gone
  if (!answers.has(self)) return `the rendezvous store did not answer ${asked}: rank 0, which serves it, is stopped or hung`;
  const silent: number[] = [];
  const there: number[] = [];
  const elsewhere: string[] = [];
  for (let r = 0; r < size; r++) {
    if (r === self) continue;
    const value = answers.get(r);
    if (value === undefined) {
      silent.push(r);
      continue;
    }
    const s = parseAnswer(value);
    if (s === undefined) elsewhere.push(`rank ${r} gave an unreadable answer`);
    else if (s?.inCall && s.what === stuck.what) there.push(r);
    else elsewhere.push(`rank ${r} has not reached it (${whereIs(s)})`);
  }
  const parts = [
    ...(silent.length > 0 ? [`${ranksText(silent)} did not answer ${asked} (stopped, or hung)`] : []),
    ...elsewhere,
    ...(there.length > 0 ? [`${ranksText(there)} wait${there.length > 1 ? '' : 's'} there too`] : []),
  ];
  if (silent.length === 0 && elsewhere.length === 0) parts.push('every rank is in it: the call itself makes no progress');
  return parts.join('; ');
}

/** One rank's watchdog: `watchdog` times its calls; a stuck one ends the job (see the top of this file). */
export class RankWatchdog {
  readonly watchdog: CollectiveWatchdog;
  private client: RendezvousClient | null = null;

  constructor(
    readonly rank: number,
    readonly size: number,
    timeoutMs: number,
    /** ends this process at once (replaced as the communicators start: they know how) */
    public exit: (code: number) => never,
  ) {
    this.watchdog = new CollectiveWatchdog(timeoutMs, (call) => void this.stuck(call));
  }

  /** hcsp launch: answers the other ranks when one asks where this rank is, and asks them when stuck */
  useStore(client: RendezvousClient): void {
    this.client = client;
    void client.get(ASK_KEY).then(() => client.set(answerKey(this.rank), JSON.stringify(this.watchdog.state())));
  }

  private async stuck(call: StuckCall): Promise<void> {
    const who = `rank ${this.rank} of ${this.size}`;
    const where = `${secondsText(call.waitedMs)} in ${call.what}`;
    // a timer that fires late says this process itself did not run (stopped, then continued: mpirun sends SIGCONT to end it)
    const late = call.waitedMs - this.watchdog.timeoutMs;
    const why =
      late > LATE_MS ? `this process was itself stopped or blocked (its timer fired ${secondsText(late)} late)` : 'a peer is stopped, hung or far behind';
    process.stderr.write(`hcsp: ${who}: no progress for ${where}, the collective timeout (--collective-timeout, ${COLLECTIVE_TIMEOUT_ENV}): ${why}\n`);
    try {
      if (this.client !== null) {
        const answers = await this.ask(this.client);
        const found = describeAnswers(this.rank, this.size, call, answers);
        process.stderr.write(`hcsp: ${who}: ${found}; ending the job\n`);
        await this.client.fail(`${who} waited ${where}: ${found}`);
      }
    } finally {
      // whatever the asking met, the process ends
      this.exit(1);
    }
  }

  /** every rank's answer that came within ASK_MS, by rank (this rank's own included) */
  private async ask(client: RendezvousClient): Promise<Map<number, string>> {
    const answers = new Map<number, string>();
    await client.set(ASK_KEY, String(this.rank));
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.all(Array.from({ length: this.size }, (_, r) => client.get(answerKey(r)).then((v) => void answers.set(r, v)))),
      new Promise((resolve) => (timer = setTimeout(resolve, ASK_MS))),
    ]);
    clearTimeout(timer);
    return answers;
  }
}
