// A progress watchdog over a rank's collectives, as NCCL's watchdog with
// TORCH_NCCL_ASYNC_ERROR_HANDLING: a call that meets the peers (a graph collective, a control
// exchange, a join) and has not completed within the limit means a peer is stopped, hung or
// far behind. Nothing else tells: a SIGSTOPped process keeps its sockets open, so neither MPI
// nor the rendezvous store sees it go. The communicators' calls wait off the JavaScript thread
// (Node's worker pool), so this timer fires on that thread while MPI or NCCL blocks. What to
// do then (ask the peers, name the stuck rank, end the job) is the caller's `onStuck`.

/** A call the watchdog saw exceed its limit. */
export interface StuckCall {
  /** names the call: "node 37 (reduceScatter layers.1.attn)", "the start-up agreement" */
  what: string;
  waitedMs: number;
}

/** Where a rank is: in a call (the oldest in flight), or between calls since the last one ended. */
export interface WatchedState {
  what: string;
  inCall: boolean;
  /** in a call: how long it has waited; between calls: how long since the last one ended */
  ms: number;
}

export class CollectiveWatchdog {
  private seq = 0;
  private readonly inFlight = new Map<number, { what: string; start: number }>();
  private last: { what: string; end: number } | null = null;
  private fired = false;

  /**
   * timeoutMs: the longest a call may wait (1 ms .. setTimeout's 2^31 - 1); onStuck: called
   * once, for the first call past it, while that call still waits (it is expected to end the
   * process; if it returns, the call goes on).
   */
  constructor(
    readonly timeoutMs: number,
    private readonly onStuck: (call: StuckCall) => void,
  ) {
    if (!Number.isInteger(timeoutMs) || timeoutMs < 1 || timeoutMs > 2 ** 31 - 1) {
      throw new Error(`CollectiveWatchdog: the limit must be a whole number of ms in [1, 2147483647] (setTimeout's range), got ${timeoutMs}`);
    }
  }

  /** runs fn as the call `what`, timed from now until it settles */
  async watch<T>(what: string, fn: () => Promise<T>): Promise<T> {
    const seq = ++this.seq;
    const start = performance.now();
    this.inFlight.set(seq, { what, start });
    // unref: the watchdog never keeps a process alive by itself
    const timer = setTimeout(() => this.fire(seq), this.timeoutMs).unref();
    try {
      return await fn();
    } finally {
      clearTimeout(timer);
      this.inFlight.delete(seq);
      this.last = { what, end: performance.now() };
    }
  }

  /** where this process is now; null before its first call */
  state(): WatchedState | null {
    const now = performance.now();
    // the oldest call in flight (a Map iterates in insertion order)
    for (const c of this.inFlight.values()) return { what: c.what, inCall: true, ms: now - c.start };
    return this.last && { what: this.last.what, inCall: false, ms: now - this.last.end };
  }

  private fire(seq: number): void {
    const call = this.inFlight.get(seq);
    if (this.fired || !call) return;
    this.fired = true;
    this.onStuck({ what: call.what, waitedMs: performance.now() - call.start });
  }
}
