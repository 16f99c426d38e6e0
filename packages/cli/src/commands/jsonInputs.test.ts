// Every JSON file the commands read (--ids, --config FILE, a model folder's config.json,
// model --device FILE) is refused at once when it is no regular file: /dev/zero was read
// until memory ran out, a fifo blocked forever (issue 21, item 8).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { resolveDevice } from './model.ts';
import { runPrefillCommand } from './prefill.ts';

const MAIN = resolve(dirname(fileURLToPath(import.meta.url)), '../main.ts');
const dir = mkdtempSync(join(tmpdir(), 'hcsp-json-inputs-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const prefill = { backend: 'cpu', config: 'tiny', tp: '1', sp: 'auto', reduce: 'ring', seed: '0', stack: 'model', json: true, quiet: true };

/**
 * A fifo with a writer waiting on it: a reader that opened it would get `text` (and the test
 * a wrong answer) rather than hang the test process.
 */
function fifoWithWriter(name: string, text: string): { path: string; writer: ChildProcess } {
  const path = join(dir, name);
  expect(spawnSync('mkfifo', [path]).status).toBe(0);
  return { path, writer: spawn('sh', ['-c', 'printf %s "$2" > "$1"', 'sh', path, text], { stdio: 'ignore' }) };
}

/** The rejection of `run`, and how long it took. */
async function refusal(run: () => Promise<unknown>): Promise<{ message: string; ms: number }> {
  const t0 = performance.now();
  const e = await run().then(
    () => new Error('resolved'),
    (err: Error) => err,
  );
  return { message: e.message, ms: performance.now() - t0 };
}

/** `hcsp ARGS` in a child, killed after 20 s: /dev/zero read by an old reader fills memory, so never in this process first. */
function hcsp(args: string[]) {
  return spawnSync(process.execPath, ['--import', 'tsx', MAIN, ...args], { encoding: 'utf8', timeout: 20_000, killSignal: 'SIGKILL' });
}

describe('JSON inputs that are no regular file are refused before any read', () => {
  it('--ids /dev/zero and --config /dev/zero: one line, exit 1', async () => {
    const ids = hcsp(['prefill', '--config', 'tiny', '--ids', '/dev/zero']);
    expect(ids.stderr).toBe('hcsp: --ids /dev/zero: is a character device, not a JSON file\n');
    expect(ids.status).toBe(1);
    const config = hcsp(['prefill', '--config', '/dev/zero']);
    expect(config.stderr).toBe('hcsp: /dev/zero: is a character device, not a JSON file\n');
    expect(config.status).toBe(1);
    // and in this process, well under a second
    const r = await refusal(() => runPrefillCommand({ ...prefill, ids: '/dev/zero' }));
    expect(r.message).toBe('--ids /dev/zero: is a character device, not a JSON file');
    expect(r.ms).toBeLessThan(1000);
  }, 60_000);

  it('a fifo as --ids, --config, a model folder config.json or --device: refused at once', async () => {
    const ids = fifoWithWriter('ids.json', '[1,2,3]');
    const config = fifoWithWriter('config.json', '{}');
    const folder = join(dir, 'model');
    mkdirSync(folder);
    const inFolder = fifoWithWriter('model/config.json', '{}');
    const device = fifoWithWriter('device.json', '{}');
    try {
      for (const [run, expected] of [
        [() => runPrefillCommand({ ...prefill, ids: ids.path }), `--ids ${ids.path}: is a fifo, not a JSON file`],
        [() => runPrefillCommand({ ...prefill, config: config.path }), `${config.path}: is a fifo, not a JSON file`],
        [() => runPrefillCommand({ ...prefill, config: folder }), `${inFolder.path}: is a fifo, not a JSON file`],
        [async () => resolveDevice(device.path), `--device ${device.path}: is a fifo, not a JSON file`],
      ] as const) {
        const r = await refusal(run);
        expect(r.message).toBe(expected);
        expect(r.ms).toBeLessThan(1000);
      }
    } finally {
      for (const f of [ids, config, inFolder, device]) f.writer.kill('SIGKILL');
    }
  });

  it('an --ids file over its size limit is refused without being read', async () => {
    const big = join(dir, 'big-ids.json');
    writeFileSync(big, '');
    spawnSync('truncate', ['-s', String(64 * 1024 * 1024 + 1), big]);
    const r = await refusal(() => runPrefillCommand({ ...prefill, ids: big }));
    expect(r.message).toBe(`--ids ${big}: is 67108865 bytes, more than the 64 MiB limit for a token id list`);
    expect(r.ms).toBeLessThan(1000);
  });
});
