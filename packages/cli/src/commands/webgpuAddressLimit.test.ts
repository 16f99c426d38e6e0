// `prefill --backend webgpu` under `ulimit -v`: the browser host's HTTP client cannot reserve
// WebAssembly memory; the run ends with one line naming the limit, not a raw undici stack
// from a promise nobody awaits (issue 21, item 13). The built bundle runs it: tsx itself
// needs WebAssembly, so the sources cannot run under the limit.
import { spawnSync } from 'node:child_process';
import { mkdirSync, rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// @ts-expect-error the build script is plain JavaScript
import { buildCli } from '../../scripts/build.mjs';

const CLI = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const outdir = join(CLI, 'dist', `test-address-limit-${process.pid}`);
beforeAll(async () => {
  mkdirSync(outdir, { recursive: true });
  await buildCli({ outdir });
}, 120_000);
afterAll(() => rmSync(outdir, { recursive: true, force: true }));

describe('the webgpu backend under an address-space limit', () => {
  it('one line naming the limit, exit 1', () => {
    const kib = 4_000_000;
    const r = spawnSync(
      'bash',
      ['-c', `ulimit -v ${kib} && exec "$0" "$1" prefill --backend webgpu --config tiny --tokens 16 --quiet`, process.execPath, join(outdir, 'hcsp.js')],
      {
        encoding: 'utf8',
        timeout: 60_000,
      },
    );
    expect(r.stderr).toBe(
      `hcsp: webgpu backend: the browser host could not allocate: WebAssembly memory, which Node's HTTP client needs to reach the browser, cannot be reserved under the address-space limit of ${kib * 1024} bytes (ulimit -v ${kib}); raise or remove the limit (ulimit -v unlimited)\n`,
    );
    expect(r.status).toBe(1);
  }, 70_000);
});
