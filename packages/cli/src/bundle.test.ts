// The compiled `hcsp` (issue: every command died in tsx's WebAssembly lexer under `ulimit -v`
// below about 40 GB, and `npx hcsp` could not find an executable). The bundle is built here,
// from the current sources, next to a copy of the real launcher, as `npm ci` lays them out.
import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// @ts-expect-error: plain JavaScript, run by node at `npm ci` (no types)
import { buildCli } from '../scripts/build.mjs';

const CLI = fileURLToPath(new URL('..', import.meta.url));
const ROOT = join(CLI, '..', '..');
const pkg = JSON.parse(readFileSync(join(CLI, 'package.json'), 'utf8'));
const rootPkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));

// Under dist/ (git-ignored), so that the external packages resolve from the repository's node_modules.
const layout = join(CLI, 'dist', `test-${process.pid}`);
const launcher = join(layout, 'bin', 'hcsp.js');

beforeAll(async () => {
  mkdirSync(join(layout, 'bin'), { recursive: true });
  copyFileSync(join(CLI, pkg.bin.hcsp), launcher);
  await buildCli({ outdir: join(layout, 'dist') });
});
afterAll(() => rmSync(layout, { recursive: true, force: true }));

/** Runs the launcher with no NODE_OPTIONS (no loader sneaks in), under `ulimit -v` when given (KiB). */
function hcsp(args: string[], ulimitKiB?: number) {
  const env = { ...process.env };
  delete env.NODE_OPTIONS;
  const cmd =
    ulimitKiB === undefined
      ? [process.execPath, launcher, ...args]
      : ['bash', '-c', `ulimit -v ${ulimitKiB} && exec "$@"`, 'bash', process.execPath, launcher, ...args];
  const t0 = performance.now();
  const r = spawnSync(cmd[0], cmd.slice(1), { encoding: 'utf8', env, cwd: layout });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr, ms: performance.now() - t0 };
}

describe('the compiled hcsp', () => {
  it('--version prints the package version', () => {
    const r = hcsp(['--version']);
    expect(r.stderr).toBe('');
    expect(r.stdout).toBe(`${pkg.version}\n`);
    expect(r.status).toBe(0);
  });

  it('runs `plan --tokens 2048 --tp 4` and --version under `ulimit -v 4000000`', () => {
    const plan = hcsp(['plan', '--tokens', '2048', '--tp', '4', '--json'], 4_000_000);
    expect(plan.stderr).toBe('');
    expect(plan.status).toBe(0);
    expect(JSON.parse(plan.stdout)).toMatchObject({ sp: true, config: 'small', tokens: 2048, tp: 4, chunk: 512 });
    const version = hcsp(['--version'], 4_000_000);
    expect(version.stdout).toBe(`${pkg.version}\n`);
  });

  it('loads no TypeScript loader, and the WebGPU backend only when asked for', () => {
    const files = readdirSync(join(layout, 'dist'));
    for (const f of files) expect(readFileSync(join(layout, 'dist', f), 'utf8'), f).not.toMatch(/from\s*["']tsx|import\(["']tsx/);
    // playwright-core is imported by a chunk of its own, not by the entry point
    expect(readFileSync(join(layout, 'dist', 'hcsp.js'), 'utf8')).not.toMatch(/from\s*["']playwright-core["']/);
    expect(files.some((f) => /from\s*["']playwright-core["']/.test(readFileSync(join(layout, 'dist', f), 'utf8')))).toBe(true);
  });

  it('a missing bundle is one clear line, not a stack trace', () => {
    const bare = join(layout, 'bare');
    mkdirSync(join(bare, 'bin'), { recursive: true });
    copyFileSync(launcher, join(bare, 'bin', 'hcsp.js'));
    const r = spawnSync(process.execPath, [join(bare, 'bin', 'hcsp.js'), '--version'], { encoding: 'utf8' });
    expect(r.stderr).toBe('hcsp: the bundle packages/cli/dist/hcsp.js is missing: run `npm run build` (npm ci runs it unless --ignore-scripts)\n');
    expect(r.status).toBe(1);
  });
});

describe('packaging', () => {
  it('the workspace package declares the bin (npm links it as node_modules/.bin/hcsp), executable, and exports no missing file', () => {
    expect(pkg.bin).toEqual({ hcsp: 'bin/hcsp.js' });
    const bin = join(CLI, pkg.bin.hcsp);
    expect(statSync(bin).mode & 0o111).not.toBe(0);
    expect(readFileSync(bin, 'utf8').startsWith('#!/usr/bin/env node\n')).toBe(true);
    expect(pkg.exports).toBeUndefined();
    // git must record it executable too, or a fresh clone's bin would not run
    expect(execFileSync('git', ['ls-files', '-s', '--', 'packages/cli/bin/hcsp.js'], { cwd: ROOT, encoding: 'utf8' })).toMatch(/^100755 /);
  });

  it('npm ci builds the bundle: the root prepare script runs the build, whose output git ignores', () => {
    expect(rootPkg.scripts.prepare).toBe('npm run build');
    expect(rootPkg.scripts.build).toBe('node packages/cli/scripts/build.mjs');
    expect(spawnSync('git', ['check-ignore', '-q', 'packages/cli/dist/hcsp.js'], { cwd: ROOT }).status).toBe(0);
  });

  // By name, as `npm install-scripts approve` writes them: the lock file has no "resolved"
  // URLs, so npm cannot verify a pinned name@version and would not match one.
  it('allowScripts approves exactly the locked packages that have install scripts (npm 11 warns about the rest)', () => {
    const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8'));
    const withScripts = Object.entries(lock.packages as Record<string, { hasInstallScript?: boolean; link?: boolean }>)
      .filter(([path, p]) => path.startsWith('node_modules/') && p.hasInstallScript && !p.link)
      .map(([path]) => path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length))
      .sort();
    expect(withScripts.length).toBeGreaterThan(0);
    expect(Object.keys(rootPkg.allowScripts).sort()).toEqual(withScripts);
    expect(Object.values(rootPkg.allowScripts).every((v) => v === true)).toBe(true);
  });
});
