// npm run build:native: cmake-js compile into native/build, after one check. A build folder
// configured before the system packages were installed (the README's main job run before its
// test command on a fresh machine) has CMake's "MPI not found" cached, and an incremental build
// never looks again, so the MPI addon would never be built. When the cache says the MPI addon
// is off and an MPI C compiler wrapper is now on PATH, the cache is removed first so that this
// build configures from scratch and finds MPI.
// Usage: node scripts/build-addon.mjs [--out DIR] [--configure-only] [cmake-js options...]
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';

const args = process.argv.slice(2);
const outAt = args.indexOf('--out');
const out = outAt >= 0 ? args[outAt + 1] : 'build';
const configureOnly = args.includes('--configure-only');
const passThrough = args.filter((a, i) => a !== '--configure-only' && i !== outAt && i !== outAt + 1);

function mpiCompilerOnPath() {
  try {
    execFileSync('sh', ['-c', 'command -v mpicc'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

const cache = join(out, 'CMakeCache.txt');
if (existsSync(cache) && /^HCSP_MPI_ADDON:INTERNAL=OFF$/m.test(readFileSync(cache, 'utf8')) && mpiCompilerOnPath()) {
  process.stderr.write(`build:native: ${cache} was configured without MPI and mpicc is now on PATH: configuring again to build the MPI addon\n`);
  rmSync(cache);
  rmSync(join(out, 'CMakeFiles'), { recursive: true, force: true });
}
const r = spawnSync('npx', ['cmake-js', configureOnly ? 'configure' : 'compile', '--out', out, ...passThrough], { stdio: 'inherit' });
process.exit(r.status ?? 1);
