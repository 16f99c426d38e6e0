import { describe, expect, it } from 'vitest';
import { NodeTimer } from './nodeTimer.ts';

describe('NodeTimer', () => {
  it('keeps the last run only; a node whose end came late ends with the next node reported', () => {
    const t = new NodeTimer();
    t.begin();
    for (let i = 1; i <= 5; i++) t.onNode(i);
    t.begin();
    t.onNode(1);
    t.onNode(3);
    const r = t.end(false, 4);
    expect(r.unreported).toBe(2);
    expect(r.nodeEndsUs[1]).toBe(r.nodeEndsUs[2]);
    expect(r.nodeEndsUs[3]).toBe(r.endUs);
    expect([...r.nodeEndsUs].every((e, i, a) => e >= r.startUs && (i === 0 || e >= a[i - 1]))).toBe(true);
  });

  it('a recorded replay has no node times', () => {
    const t = new NodeTimer();
    t.begin();
    t.onNode(9);
    expect(t.end(true, 9)).toMatchObject({ recorded: true, nodeEndsUs: new Float64Array(0), unreported: 0 });
  });
});
