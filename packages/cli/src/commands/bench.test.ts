import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { SuiteReport } from '@hcsp/bench';
import { afterAll, describe, expect, it } from 'vitest';

const dir = mkdtempSync(join(tmpdir(), 'hcsp-bench-suite-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('the command', () => {
  const main = fileURLToPath(new URL('../main.ts', import.meta.url));
  const hcsp = (args: string[]) => spawnSync(process.execPath, ['--import', 'tsx', main, 'bench', ...args], { encoding: 'utf8', timeout: 300_000 });

  it('--suite --quick --json: one JSON object on stdout, the files written', () => {
    const out = join(dir, 'cli');
    const r = hcsp(['--suite', '--quick', '--json', '--quiet', '--backends', 'cpu', '--no-prefill', '--out', out]);
    expect(r.status, r.stderr).toBe(0);
    const json = JSON.parse(r.stdout) as SuiteReport;
    expect(json.results.map((m) => `${m.case}@${m.tokens}`)).toEqual([
      'hc-mix@16',
      'hc-mix@32',
      'hc-mix@64',
      'hc-combine@16',
      'hc-combine@32',
      'hc-combine@64',
      'layer@32',
    ]);
    expect(json.files).toEqual({ json: join(out, 'bench.json'), plot: join(out, 'time-vs-T.svg') });
    expect(JSON.parse(readFileSync(join(out, 'bench.json'), 'utf8')).results).toHaveLength(7);
  });

  it('--out is checked before the suite runs: a file as its folder, /proc, a symbolic link as bench.json (its target untouched)', () => {
    const file = join(dir, 'a-file');
    writeFileSync(file, 'x');
    const victim = join(dir, 'victim');
    writeFileSync(victim, "the user's file");
    const linked = join(dir, 'linked');
    mkdirSync(linked);
    symlinkSync(victim, join(linked, 'bench.json'));
    const cases: [string, string][] = [
      [join(file, 'out'), `${file} is a file, not a folder`],
      ['/proc/hcsp-bench', "is under /proc (the kernel's and devices' files), not a place for files"],
      [linked, `${join(linked, 'bench.json')} is a symbolic link; it is not followed (remove it, or give another folder)`],
    ];
    for (const [out, why] of cases) {
      const r = hcsp(['--suite', '--quick', '--backends', 'cpu', '--no-prefill', '--out', out]);
      // the error alone: no progress line, so nothing ran before it
      expect(r.stderr, out).toBe(`hcsp: --out ${out}: ${why}\n`);
      expect(r.status).toBe(1);
      expect(r.stdout).toBe('');
    }
    expect(readFileSync(victim, 'utf8')).toBe("the user's file");
  });

  it("options of the single-purpose bench are refused with --suite, the suite's without it", () => {
    const a = hcsp(['--suite', '--host-reps', '2']);
    expect(a.status).toBe(1);
    expect(a.stderr).toMatch(/hcsp: bench --suite: --host-reps \(the suite takes --reps/);
    const b = hcsp(['--budget', '5']);
    expect(b.status).toBe(1);
    expect(b.stderr).toMatch(/hcsp: bench: --budget belongs to --suite/);
  });
});
