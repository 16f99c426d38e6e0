import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, watch } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { markTempFolder, tempPathFor } from '../output/tempFiles.ts';

// `hcsp weights` interrupted while it writes: the temporary folder goes, nothing is left
// behind; a temporary folder of a writer that died without cleaning up is swept next time.
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../../..');
const dir = mkdtempSync(join(tmpdir(), 'hcsp-weights-signals-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Starts `hcsp weights` and delivers SIGINT as soon as its temporary folder appears. */
function interruptWeights(d: string): Promise<{ status: number | null; stderr: string; left: string[] }> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', 'packages/cli/src/main.ts', 'weights', '--config', 'small', '--layout', 'fp8-release', '--shards', '3', '--out', join(d, 'm')],
      { cwd: ROOT },
    );
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (s: string) => (stderr += s));
    let signalled = false;
    const watcher = watch(d, (_event, name) => {
      if (signalled || !name || !/^\.m\.hcsp-tmp-.+-\d+-[0-9a-f]{16}$/.test(String(name))) return;
      signalled = true;
      child.kill('SIGINT');
    });
    child.on('error', reject);
    child.on('close', (status) => {
      watcher.close();
      resolvePromise({ status, stderr, left: readdirSync(d) });
    });
  });
}

describe('a signal while weights writes its folder', () => {
  it('SIGINT: the temporary folder is removed, "interrupted by SIGINT", exit 130', async () => {
    const d = join(dir, 'int');
    mkdirSync(d);
    const r = await interruptWeights(d);
    expect(r.stderr).toBe('hcsp: interrupted by SIGINT\n');
    expect(r.status).toBe(130);
    expect(r.left).toEqual([]);
  }, 60_000);

  it("sweeps a dead writer's temporary folder, keeps a live one's", async () => {
    const d = join(dir, 'stale');
    mkdirSync(d);
    // pid 2^22 + 1 is above Linux's PID_MAX_LIMIT (2^22): no process can have it
    const dead = tempPathFor(join(d, 'm'), 'tmp', { host: hostname(), pid: 4194305 });
    const live = tempPathFor(join(d, 'm'));
    for (const f of [dead, live]) {
      mkdirSync(f);
      markTempFolder(f);
    }
    const { writeModelFolder } = await import('./weights.ts');
    const { TINY } = await import('@hcsp/core');
    await writeModelFolder({ config: TINY, seed: 0, out: join(d, 'm'), layout: 'hf', shards: 1, force: false });
    expect(readdirSync(d).sort()).toEqual([basename(live), 'm']);
  });
});
