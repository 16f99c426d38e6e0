// Timing: medians of wall-clock repetitions, and the rate they give.

export function median(values: number[]): number {
  if (values.length === 0) throw new Error('median of no values');
  const s = [...values].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/** Seconds of each of `reps` runs of `run`, one after the other. */
export async function timed(reps: number, run: () => Promise<unknown>): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < reps; i++) {
    const t0 = performance.now();
    await run();
    out.push((performance.now() - t0) / 1000);
  }
  return out;
}

export interface Timing {
  /** median */
  seconds: number;
  reps: number[];
  gflops: number;
}

export const timing = (reps: number[], flops: number): Timing => {
  const s = median(reps);
  return { seconds: s, reps, gflops: flops / s / 1e9 };
};
