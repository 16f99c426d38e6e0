import { describe, expect, it } from 'vitest';
import { LOG_LINE_INTERVAL_MS, nodeProgress } from './progress.ts';

/** A stream and a clock the test drives. */
function harness(isTTY: boolean) {
  const lines: string[] = [];
  let t = 0;
  const stream = Object.assign(
    {
      write(s: string) {
        lines.push(s);
        return true;
      },
    },
    { isTTY },
  ) as unknown as NodeJS.WritableStream & { isTTY?: boolean };
  return { lines, stream, now: () => t, advance: (ms: number) => (t += ms) };
}

describe('progress off a terminal (logs)', () => {
  it('prints nothing for work under a second', () => {
    const h = harness(false);
    const p = nodeProgress('prefill', { stream: h.stream, now: h.now });
    for (let i = 1; i <= 100; i++) {
      h.advance(9);
      p.onNode(i, 100);
    }
    p.stop();
    expect(h.lines).toEqual([]);
  });

  it('one line after a second, then at most one per interval, and a last line at the end', () => {
    const h = harness(false);
    const p = nodeProgress('prefill small tp4 T=20000', { stream: h.stream, now: h.now });
    // 1000 nodes over 35 s: 35 ms each
    for (let i = 1; i <= 1000; i++) {
      h.advance(35);
      p.onNode(i, 1000);
    }
    p.stop();
    expect(h.lines[0]).toBe('hcsp: prefill small tp4 T=20000: 29/1000 ops (2.9%), 1 s\n');
    // first line at 1.015 s, then >= 10 s apart: at 11.015, 21.035, 31.045, and the end (35 s)
    expect(h.lines).toHaveLength(5);
    expect(h.lines.at(-1)).toBe('hcsp: prefill small tp4 T=20000: 1000/1000 ops (100.0%), 35 s\n');
    expect(LOG_LINE_INTERVAL_MS).toBe(10_000);
    for (const l of h.lines) expect(l).toMatch(/^hcsp: prefill small tp4 T=20000: \d+\/1000 ops \(\d+\.\d%\), \d+ s\n$/);
  });

  it('--quiet prints nothing', () => {
    const h = harness(false);
    const p = nodeProgress('prefill', { stream: h.stream, now: h.now, quiet: true });
    for (let i = 1; i <= 100; i++) {
      h.advance(1000);
      p.onNode(i, 100);
    }
    p.stop();
    expect(h.lines).toEqual([]);
  });

  it('on a terminal it draws a bar, not log lines', () => {
    const h = harness(true);
    const p = nodeProgress('prefill', { stream: h.stream, now: h.now });
    for (let i = 1; i <= 20; i++) {
      h.advance(1000);
      p.onNode(i, 20);
    }
    p.stop();
    expect(h.lines.join('')).toContain('20/20 ops');
    expect(h.lines.some((l) => l.startsWith('hcsp: '))).toBe(false);
  });
});
