// Seconds given on the command line (the rendezvous and collective timeouts), as a timer can wait them.

/** setTimeout's largest delay in ms (2^31 - 1): a longer one fires at once, with a TimeoutOverflowWarning */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * Parses a positive number of seconds, plain decimal digits with an optional fraction
 * ('30', '2.5'; not '1e3', '-1', ' 3', ''), into whole milliseconds a timer can wait:
 * at least 1 ms, at most setTimeout's limit (2147483.647 s).
 */
export function parseSeconds(value: string, name: string): number {
  const range = `a positive number of seconds, at most ${MAX_TIMER_MS / 1000} (setTimeout's limit)`;
  if (!/^\d+(\.\d+)?$/.test(value)) throw new Error(`${name} must be ${range}, got ${JSON.stringify(value)}`);
  const ms = Math.round(Number(value) * 1000);
  if (ms > MAX_TIMER_MS) throw new Error(`${name} is too large: at most ${MAX_TIMER_MS / 1000} s (setTimeout's limit), got ${JSON.stringify(value)}`);
  if (ms < 1) throw new Error(`${name} is too small: at least 0.001 s, got ${JSON.stringify(value)}`);
  return ms;
}
