import { describe, expect, it } from 'vitest';
import { scaleRows, whyNotRun, type Measurement } from './suite.ts';

const row = (m: Partial<Measurement>): Measurement =>
  ({ case: 'hc-mix', tokens: 1024, backend: 'cpu', status: 'measured', reason: null, seconds: 1, runs: [1], ...m }) as Measurement;

describe('budget and scale', () => {
  it('a larger T is left out, with the prediction, when its linear extrapolation is over the budget', () => {
    const spec = { case: 'hc-mix', tokens: 16384, scaled: true } as Parameters<typeof whyNotRun>[1];
    const results = [row({ tokens: 1024, seconds: 2 }), row({ tokens: 4096, seconds: 20 })];
    expect(whyNotRun(results, spec, 'cpu', 60)).toBe('a run would take about 80.0 s (T=4096: 20.00 s, x4), over the 60 s budget per case');
    expect(whyNotRun(results, spec, 'cpu', 100)).toBeNull();
    expect(whyNotRun(results, spec, 'webgpu', 1)).toBeNull();
    expect(whyNotRun([row({ tokens: 4096, status: 'not measured', seconds: null })], spec, 'cpu', 60)).toBe('T=4096 was not measured');
    expect(whyNotRun(results, { ...spec, scaled: false }, 'cpu', 1)).toBeNull();
  });

  it('scale: time(T)/time(T0) / (T/T0), with what was not measured said', () => {
    const rows = scaleRows(
      [row({ tokens: 1024, seconds: 1 }), row({ tokens: 4096, seconds: 5 }), row({ tokens: 16384, status: 'not measured', seconds: null, reason: 'too slow' })],
      [1024, 4096, 16384],
    );
    expect(rows).toEqual([
      {
        case: 'hc-mix',
        backend: 'cpu',
        base: 1024,
        points: [
          { tokens: 1024, seconds: 1, ratio: 1, note: null },
          { tokens: 4096, seconds: 5, ratio: 1.25, note: null },
          { tokens: 16384, seconds: null, ratio: null, note: 'not measured: too slow' },
        ],
      },
    ]);
  });
});
