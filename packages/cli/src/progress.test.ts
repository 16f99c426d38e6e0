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

/** nodeProgress over `total` nodes, `ms` apart on the harness's clock, then stopped: the lines it wrote */
function drive(isTTY: boolean, label: string, total: number, ms: number, quiet?: boolean): string[] {
  const h = harness(isTTY);
  const p = nodeProgress(label, { stream: h.stream, now: h.now, ...(quiet ? { quiet } : {}) });
  for (let i = 1; i <= total; i++) {
    h.advance(ms);
    p.onNode(i, total);
  }
  p.stop();
  return h.lines;
}

describe('progress off a terminal (logs)', () => {
  it('prints nothing for work under a second', () => {
    const lines = drive(false, 'prefill', 100, 9);
    expect(lines).toEqual([]);
  });

  it('one line after a second, then at most one per interval, and a last line at the end', () => {
    // 1000 nodes over 35 s: 35 ms each
    const lines = drive(false, 'prefill small tp4 T=20000', 1000, 35);
    expect(lines[0]).toBe('hcsp: prefill small tp4 T=20000: 29/1000 ops (2.9%), 1 s\n');
    // first line at 1.015 s, then >= 10 s apart: at 11.015, 21.035, 31.045, and the end (35 s)
    expect(lines).toHaveLength(5);
    expect(lines.at(-1)).toBe('hcsp: prefill small tp4 T=20000: 1000/1000 ops (100.0%), 35 s\n');
    expect(LOG_LINE_INTERVAL_MS).toBe(10_000);
    for (const l of lines) expect(l).toMatch(/^hcsp: prefill small tp4 T=20000: \d+\/1000 ops \(\d+\.\d%\), \d+ s\n$/);
  });

  it('--quiet prints nothing', () => {
    const lines = drive(false, 'prefill', 100, 1000, true);
    expect(lines).toEqual([]);
  });

  it('on a terminal it draws a bar, not log lines', () => {
    const lines = drive(true, 'prefill', 20, 1000);
    expect(lines.join('')).toContain('20/20 ops');
    expect(lines.some((l) => l.startsWith('hcsp: '))).toBe(false);
  });
});
