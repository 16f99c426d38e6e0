import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

// The README's two commands in either order: a build folder configured before MPI was
// installed (here: FindMPI disabled on the first configure, as a machine without
// libopenmpi-dev sees it) must build the MPI addon on the next `npm run build:native` once
// MPI is there (scripts/setup-system.sh installs it, so it is on this machine).
const nativeDir = join(import.meta.dirname, '..');
const out = mkdtempSync(join(tmpdir(), 'hcsp-build-addon-'));
afterAll(() => rmSync(out, { recursive: true, force: true }));

function configure(...extra: string[]): { status: number | null; stderr: string; cache: string } {
  const r = spawnSync('node', ['scripts/build-addon.mjs', '--out', out, '--configure-only', ...extra], { cwd: nativeDir, encoding: 'utf8', timeout: 120_000 });
  return { status: r.status, stderr: r.stderr, cache: readFileSync(join(out, 'CMakeCache.txt'), 'utf8') };
}

describe('build:native after a configure without MPI', () => {
  it('configures again and builds the MPI addon once MPI is installed', () => {
    expect(spawnSync('sh', ['-c', 'command -v mpicc']).status, 'mpicc on PATH (scripts/setup-system.sh installs openmpi-bin)').toBe(0);
    const without = configure('--CDCMAKE_DISABLE_FIND_PACKAGE_MPI=ON');
    expect(without.status).toBe(0);
    expect(without.cache).toMatch(/^HCSP_MPI_ADDON:INTERNAL=OFF$/m);
    const again = configure();
    expect(again.status).toBe(0);
    expect(again.stderr).toMatch(/configured without MPI and mpicc is now on PATH: configuring again/);
    expect(again.cache).toMatch(/^HCSP_MPI_ADDON:INTERNAL=ON$/m);
    expect(readFileSync(join(out, 'build.ninja'), 'utf8')).toMatch(/hcsp_mpi\.node/);
  }, 240_000);
});
