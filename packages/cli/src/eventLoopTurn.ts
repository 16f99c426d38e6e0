// Long computations on the JavaScript thread (the CPU reference, the float64 evaluation,
// generating synthetic weights, comparing tensors) give the event loop a turn every
// TURN_MS: a signal's handler (signals.ts) can only run in a turn, so SIGINT or SIGTERM is
// then honoured within about that time plus one step's (one node's, one tensor's), instead
// of when the computation ends.
const TURN_MS = 50;

let last = performance.now();

/**
 * A turn of the event loop when the last one is TURN_MS or more ago (a promise to await),
 * else undefined (nothing to wait for: the check costs a clock read).
 */
export function eventLoopTurn(): Promise<void> | undefined {
  if (performance.now() - last < TURN_MS) return undefined;
  // setImmediate runs after the loop has polled for I/O, where a signal is picked up
  return new Promise((done) =>
    setImmediate(() => {
      last = performance.now();
      done();
    }),
  );
}
