// One process's clock over a run for `prefill --trace`: when the run began, when each node
// ended (the engine's onNode after each node, run node by node), or, for a run that was one
// recorded replay (graph/graphSession.ts), only when the replay began and ended: the nodes
// of a replay have no times of their own on the host.

/** microseconds since the Unix epoch, so that the clocks of processes on one node line up */
export function epochMicros(): number {
  return (performance.timeOrigin + performance.now()) * 1000;
}

/** One process's (or rank's) timing of its last run. */
export interface RunTiming {
  /** when the run was asked for, in epoch microseconds */
  startUs: number;
  /** when the run returned */
  endUs: number;
  /** the run was one recorded replay: nodeEndsUs is empty */
  recorded: boolean;
  /** node i of the run's graph ended at nodeEndsUs[i] (node by node only) */
  nodeEndsUs: Float64Array;
  /** nodes whose end was not reported before the run returned (a backend in another process reports progress by message): each ends with the next node reported, or the run */
  unreported: number;
}

export class NodeTimer {
  private startUs = 0;
  private ends: number[] = [];

  /** right before each run: only the last run is kept */
  begin(): void {
    this.startUs = epochMicros();
    this.ends = [];
  }

  /** RunOptions.onNode: node `done - 1` has just ended (a replay reports once, all nodes done) */
  readonly onNode = (done: number): void => {
    this.ends[done - 1] = epochMicros();
  };

  /** after the run; `recorded`: the engine's EngineStats.recorded (absent where a backend keeps none) */
  end(recorded: boolean, nodes: number): RunTiming {
    const endUs = epochMicros();
    if (recorded) return { startUs: this.startUs, endUs, recorded, nodeEndsUs: new Float64Array(0), unreported: 0 };
    // a node ended no later than the next one reported
    const ends = new Float64Array(nodes);
    let unreported = 0;
    let next = endUs;
    for (let i = nodes - 1; i >= 0; i--) {
      const t = this.ends[i];
      if (t === undefined) unreported++;
      else next = Math.min(next, t);
      ends[i] = next;
    }
    return { startUs: this.startUs, endUs, recorded, nodeEndsUs: ends, unreported };
  }
}
