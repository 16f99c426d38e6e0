// What `hcsp xcheck` checks before its runs: --report (never through a symbolic link, an
// existing report replaced only with --force, an empty, special, read-only or unwritable
// place refused at once) and the memory every SPEC needs (refused before any allocation).
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { runXcheckCommand } from './xcheck.ts';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../../..');
const dir = mkdtempSync(join(tmpdir(), 'hcsp-xcheck-outputs-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const tiny = {
  config: 'tiny',
  tokens: '16',
  tp: '2',
  seed: '0',
  stack: 'model',
  sp: 'auto',
  reduce: 'ring',
  exact: false,
  quiet: true,
  compare: 'cpu:sp=off,cpu:sp=on',
};
// a run of tens of seconds: a refusal measured in milliseconds came before it
const long = { ...tiny, config: 'small', tokens: '1100', tp: '4', exact: true };

/** runXcheckCommand's refusal and how long it took */
async function refused(opts: Partial<Parameters<typeof runXcheckCommand>[0]>): Promise<{ message: string; ms: number }> {
  const start = performance.now();
  try {
    await runXcheckCommand({ ...long, ...opts });
  } catch (e) {
    return { message: (e as Error).message, ms: performance.now() - start };
  }
  throw new Error('xcheck ran: it should have been refused');
}

describe('xcheck --report is opened safely', () => {
  it('a symbolic link as index.html is refused, also with --force, and its target left alone', async () => {
    const report = join(dir, 'linked');
    mkdirSync(report);
    const victim = join(dir, 'victim.txt');
    writeFileSync(victim, "the user's file\n");
    symlinkSync(victim, join(report, 'index.html'));
    for (const force of [false, true]) {
      const r = await refused({ report, force });
      expect(r.message).toBe(`--report ${report}: ${join(report, 'index.html')} is a symbolic link; it is not followed (remove it, or give another folder)`);
    }
    expect(readFileSync(victim, 'utf8')).toBe("the user's file\n");
    expect(readdirSync(report)).toEqual(['index.html']);
  });

  it('a symbolic link as the folder is refused', async () => {
    const real = join(dir, 'real');
    mkdirSync(real);
    const link = join(dir, 'link');
    symlinkSync(real, link);
    expect((await refused({ report: link })).message).toBe(`--report ${link}: is a symbolic link; give the folder itself (links are not followed)`);
    expect(readdirSync(real)).toEqual([]);
  });

  it('an existing report is replaced only with --force', async () => {
    const report = join(dir, 'existing');
    mkdirSync(report);
    writeFileSync(join(report, 'report.json'), '{"old": true}\n');
    expect((await refused({ report })).message).toBe(`--report ${report}: ${join(report, 'report.json')} exists (--force replaces it)`);
    expect(readFileSync(join(report, 'report.json'), 'utf8')).toBe('{"old": true}\n');
    const { report: r } = await runXcheckCommand({ ...tiny, report, force: true });
    expect(JSON.parse(readFileSync(join(report, 'report.json'), 'utf8'))).toEqual(r);
    expect(readdirSync(report).sort()).toEqual(['index.html', 'report.json']);
  });
});

describe('xcheck --report is checked before any run', () => {
  const file = join(dir, 'a-file');
  writeFileSync(file, 'x');
  const cases: [string, string, string][] = [
    ['an empty path', '', '--report "": an empty path names no folder'],
    [
      'a place under /proc',
      '/proc/hcsp-xcheck-report',
      "--report /proc/hcsp-xcheck-report: is under /proc (the kernel's and devices' files), not a place for files",
    ],
    ['a folder under a file', join(file, 'report'), `--report ${join(file, 'report')}: ${file} is a file, not a folder`],
  ];
  for (const [what, report, message] of cases) {
    it(`${what}: refused in well under a second, nothing made`, async () => {
      const r = await refused({ report });
      expect(r.message).toBe(message);
      expect(r.ms).toBeLessThan(500);
    }, 120_000);
  }

  it('a folder this user cannot write: refused, naming it, before anything runs', () => {
    // as root permissions do not apply: the command runs as nobody
    const place = mkdtempSync(join(tmpdir(), 'hcsp-xcheck-unwritable-'));
    try {
      chmodSync(place, 0o755);
      const locked = join(place, 'locked');
      mkdirSync(locked, { mode: 0o555 });
      chmodSync(locked, 0o555);
      const asNobody = process.getuid?.() === 0 ? { uid: 65534, gid: 65534 } : {};
      const report = join(locked, 'report');
      const start = performance.now();
      const r = spawnSync(
        process.execPath,
        [join(ROOT, 'packages/cli/bin/hcsp.js'), 'xcheck', '--config', 'small', '--tokens', '1100', '--compare', 'cpu:sp=off,cpu:sp=on', '--report', report],
        {
          encoding: 'utf8',
          timeout: 120_000,
          cwd: place,
          ...asNobody,
        },
      );
      const ms = performance.now() - start;
      expect(r.stderr).toBe(`hcsp: --report ${report}: cannot create files in ${locked} (where the folder would be made) (permission denied)\n`);
      expect(r.status).toBe(1);
      expect(r.stdout).toBe('');
      // the process's start included: the run itself would take tens of seconds
      expect(ms).toBeLessThan(5000);
      expect(readdirSync(locked)).toEqual([]);
    } finally {
      rmSync(place, { recursive: true, force: true });
    }
  }, 120_000);
});

describe('the memory guard comes before any allocation, for every SPEC', () => {
  for (const tokens of ['10000000', '99999999']) {
    it(`--tokens ${tokens} (tiny) is refused at once`, async () => {
      const r = await refused({ ...tiny, tokens, exact: true });
      expect(r.message).toMatch(
        new RegExp(`^xcheck cpu:sp=off: prefill of tiny at tp 2 with T ${tokens} needs about [\\d.]+ [GT]iB of memory .*; nothing was allocated`),
      );
      expect(r.ms).toBeLessThan(2000);
    }, 120_000);
  }

  it('a later SPEC that needs more than the first is refused too, naming it, before the first runs', async () => {
    // tiny at T 4096, tp 4: SP on needs about 154 MiB, SP off with SP on's named values kept about 183 MiB
    const r = await refused({ ...tiny, tokens: '4096', tp: '4', compare: 'cpu:sp=on,cpu:sp=off', maxMemory: '160M' });
    expect(r.message).toMatch(
      /^xcheck cpu:sp=off \(with cpu:sp=on's named values kept\): prefill of tiny at tp 4 with T 4096 needs about 18\d\.\d MiB of memory .*, more than --max-memory \(160\.0 MiB\); nothing was allocated/,
    );
    expect(r.ms).toBeLessThan(2000);
  }, 120_000);
});
