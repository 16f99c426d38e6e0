// A prefill that would not fit is refused before anything is allocated (issue: flash-next
// silently began generating 237.7 GiB); a long one reports progress in logs.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { runPrefillCommand } from './prefill.ts';

afterEach(() => vi.restoreAllMocks());

const base = { backend: 'cpu', config: 'tiny', tp: '2', tokens: '40', sp: 'auto', reduce: 'ring', seed: '0', stack: 'model', json: true, quiet: true };

describe('the memory guard', () => {
  it('flash-next at T 8: refused at once, with the estimate (its hundreds of GiB of weights) and the limit', async () => {
    const rss = process.memoryUsage.rss();
    const t0 = performance.now();
    const err = (await runPrefillCommand({ ...base, config: 'flash-next', tp: '4', tokens: '8', maxMemory: '64G' }).catch((e: Error) => e)) as Error;
    expect(err.message).toMatch(
      /^prefill of flash-next at tp 4 with T 8 needs about \d+\.\d GiB of memory \(synthetic weights [2-9]\d\d\.\d GiB generated whole, .*\), more than --max-memory \(64\.0 GiB\); nothing was allocated/,
    );
    expect(performance.now() - t0).toBeLessThan(10_000);
    // nothing of the 237.7 GiB was generated
    expect(process.memoryUsage.rss() - rss).toBeLessThan(512 * 2 ** 20);
  });

  it('the default limit is the free memory: T 100000000 does not fit anywhere', async () => {
    await expect(runPrefillCommand({ ...base, tokens: '100000000' })).rejects.toThrow(
      /with T 100000000 needs about [\d.]+ GiB of memory .* more than the machine's free memory \([\d.]+ [GM]iB\); nothing was allocated/,
    );
  });

  it('a small run passes a limit above its estimate and is refused below it', async () => {
    const ok = JSON.parse(await runPrefillCommand({ ...base, maxMemory: '1G' }));
    expect(ok.memoryEstimateBytes).toBeGreaterThan(0);
    expect(ok.memoryEstimateBytes).toBeLessThan(2 ** 30);
    await expect(runPrefillCommand({ ...base, maxMemory: String(ok.memoryEstimateBytes - 1) })).rejects.toThrow(/more than --max-memory/);
    await expect(runPrefillCommand({ ...base, maxMemory: 'plenty' })).rejects.toThrow('--max-memory must be a positive size');
  });
});

describe('progress off a terminal', () => {
  it('a long run prints a line at most every 10 s on stderr, and none with --quiet', async () => {
    const lines: string[] = [];
    vi.spyOn(process.stderr, 'write').mockImplementation((s: string | Uint8Array) => {
      lines.push(String(s));
      return true;
    });
    // every reading of the clock is 100 ms later: a run of ~260 nodes takes ~26 s
    let t = 0;
    vi.spyOn(performance, 'now').mockImplementation(() => (t += 100));
    const isTTY = process.stderr.isTTY;
    process.stderr.isTTY = false;
    try {
      await runPrefillCommand({ ...base, quiet: false });
      const progress = lines.filter((l) => /^hcsp: prefill tiny tp2 T=40: \d+\/\d+ ops \(\d+\.\d%\), \d+ s\n$/.test(l));
      expect(progress.length).toBe(lines.length);
      // at 1 s, then every 10 s, and the last line
      expect(progress.length).toBeGreaterThanOrEqual(3);
      expect(progress.at(-1)).toMatch(/: (\d+)\/\1 ops \(100\.0%\)/);
      const at = progress.slice(0, -1).map((l) => Number(/, (\d+) s\n$/.exec(l)![1]));
      expect(at[0]).toBe(1);
      for (let i = 1; i < at.length; i++) expect(at[i] - at[i - 1]).toBeGreaterThanOrEqual(10);
      lines.length = 0;
      await runPrefillCommand({ ...base, quiet: true });
      expect(lines).toEqual([]);
    } finally {
      process.stderr.isTTY = isTTY;
    }
  });
});
