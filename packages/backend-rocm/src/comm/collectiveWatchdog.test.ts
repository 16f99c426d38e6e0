import { describe, expect, it } from 'vitest';
import { CollectiveWatchdog, type StuckCall } from './collectiveWatchdog.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const never = () => new Promise<never>(() => {});

function watchdog(ms: number): { dog: CollectiveWatchdog; stuck: StuckCall[] } {
  const stuck: StuckCall[] = [];
  return { dog: new CollectiveWatchdog(ms, (c) => stuck.push(c)), stuck };
}

describe('the collective watchdog', () => {
  it('a call past the limit fires onStuck once, while it still waits, naming it and how long it waited', async () => {
    const { dog, stuck } = watchdog(300);
    void dog.watch('node 37 (reduceScatter layers.1.attn)', never);
    await sleep(50);
    expect(stuck).toEqual([]);
    await sleep(400);
    expect(stuck).toHaveLength(1);
    expect(stuck[0].what).toBe('node 37 (reduceScatter layers.1.attn)');
    expect(stuck[0].waitedMs).toBeGreaterThanOrEqual(299);
    expect(dog.state()).toMatchObject({ what: 'node 37 (reduceScatter layers.1.attn)', inCall: true });
    // a second stuck call does not fire again: the first one ends the job
    void dog.watch('node 38 (allGather x)', never);
    await sleep(450);
    expect(stuck).toHaveLength(1);
  });

  it('calls that settle in time never fire, resolved or rejected, however long the process goes on', async () => {
    const { dog, stuck } = watchdog(400);
    expect(dog.state()).toBeNull();
    expect(await dog.watch('a', async () => 7)).toBe(7);
    await expect(dog.watch('b', async () => Promise.reject(new Error('peer lost')))).rejects.toThrow('peer lost');
    await expect(
      dog.watch('c', () => {
        throw new Error('refused');
      }),
    ).rejects.toThrow('refused');
    // each call has its own limit: three calls of 150 ms in a row are 450 ms, none over 400
    for (const what of ['d', 'e', 'f']) await dog.watch(what, () => sleep(150));
    await sleep(450);
    expect(stuck).toEqual([]);
    expect(dog.state()).toMatchObject({ what: 'f', inCall: false });
    expect(dog.state()!.ms).toBeGreaterThanOrEqual(440);
  });

  it('nested calls (a collective inside a join step) are each timed; the state is the oldest in flight', async () => {
    const { dog, stuck } = watchdog(300);
    let inner: unknown = null;
    const outer = dog.watch('the MPI join', async () => {
      await dog.watch('rank 1 connecting', () => sleep(20));
      inner = dog.state();
      return never();
    });
    void outer;
    await sleep(100);
    expect(inner).toMatchObject({ what: 'the MPI join', inCall: true });
    await sleep(400);
    expect(stuck.map((c) => c.what)).toEqual(['the MPI join']);
  });

  it("the limit is a whole number of ms within setTimeout's range", () => {
    for (const bad of [0, -1, 1.5, 2 ** 31, Number.NaN, Infinity]) {
      expect(() => new CollectiveWatchdog(bad, () => {})).toThrow(
        `CollectiveWatchdog: the limit must be a whole number of ms in [1, 2147483647] (setTimeout's range), got ${bad}`,
      );
    }
    expect(new CollectiveWatchdog(2 ** 31 - 1, () => {}).timeoutMs).toBe(2147483647);
  });

  it('its timer never keeps the process alive by itself', async () => {
    const { spawnSync } = await import('node:child_process');
    const t0 = performance.now();
    const r = spawnSync(
      process.execPath,
      [
        '--import',
        'tsx',
        '--input-type=module',
        '-e',
        `
      const { CollectiveWatchdog } = await import(${JSON.stringify(new URL('./collectiveWatchdog.ts', import.meta.url).href)});
      const dog = new CollectiveWatchdog(60_000, () => console.log('fired'));
      void dog.watch('a call that never settles', () => new Promise(() => {}));
    `,
      ],
      { cwd: new URL('../../../../', import.meta.url), encoding: 'utf8', timeout: 30_000 },
    );
    expect(r.stdout).toBe('');
    expect(r.signal).toBeNull();
    expect(performance.now() - t0).toBeLessThan(20_000);
  });
});
