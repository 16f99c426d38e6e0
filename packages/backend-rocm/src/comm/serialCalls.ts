// What the process-per-rank communicators (ncclCommunicator.ts, mpiCommunicator.ts) share
// around their addon calls: one call at a time in the order made, each timed by the rank's
// collective watchdog when it has one, a failure latch that refuses every later call, and the
// addon's errors rethrown as their typed classes.
import type { CollectiveWatchdog } from './collectiveWatchdog.ts';

/**
 * Calls run one at a time in the order they are made. After a failed one that `latches` (by
 * default every failure) each later call is refused, naming the first failure: a collective
 * that failed on one rank may leave its peers waiting in it, so the world's state is unknown.
 */
export class SerialCalls {
  private queue: Promise<unknown> = Promise.resolve();
  private failure: Error | null = null;
  private readonly who: string;
  private readonly latches: (e: Error) => boolean;
  private readonly watchdog: CollectiveWatchdog | null;

  /** who: names the communicator in a refusal ("NCCL communicator of rank 0"); watchdog: times each call from its start (not its wait in the queue) */
  constructor(who: string, latches: (e: Error) => boolean = () => true, watchdog: CollectiveWatchdog | null = null) {
    this.who = who;
    this.latches = latches;
    this.watchdog = watchdog;
  }

  /** runs fn after the calls already made, unless an earlier one failed; what: names the call in a refusal and to the watchdog */
  run<T>(what: string, fn: () => Promise<T>): Promise<T> {
    const result = this.queue.then(() => {
      const refused = this.refusal(what);
      if (refused) throw refused;
      return this.watchdog ? this.watchdog.watch(what, fn) : fn();
    });
    this.queue = result.then(
      () => {},
      (e: Error) => {
        if (this.latches(e)) this.failure ??= e;
      },
    );
    return result;
  }

  /** the refusal a call `what` made now would get (an earlier one failed), or null: for work a caller starts outside run() */
  refusal(what: string): Error | null {
    return this.failure && new Error(`${this.who}: refused ${what}: an earlier collective failed (${this.failure.message})`);
  }

  /** refuses every later call with this reason (kept if a failure is already latched) */
  fail(e: Error): void {
    this.failure ??= e;
  }

  /** settles once the calls already made have (whether they failed or not) */
  async idle(): Promise<void> {
    await this.queue.catch(() => {});
  }
}

/** fn's errors rethrown through `typed` (the addon's error codes as their classes), for calls and for promises */
export function typedCalls(typed: (e: unknown) => unknown): <T>(fn: () => T | Promise<T>) => Promise<T> {
  return async (fn) => {
    try {
      return await fn();
    } catch (e) {
      throw typed(e);
    }
  };
}
