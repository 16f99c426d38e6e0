import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

// Where the native addons are (hcsp_native.node, and hcsp_mpi.node for the MPI communicator)
// and how they are loaded: probed first in a child process (node-llama-cpp's binary probing),
// so that a binary built for another Node-API, CPU or libc, or against a library missing at run
// time, crashes or throws there, not in this process.

/** The command that builds both addons (hcsp_mpi.node where CMake finds MPI). */
export const BUILD_COMMAND = 'npm run build:native';

/** The path in environment variable `variable` where set, else `file` in the cmake-js build folder of native/. */
export function builtAddonPath(variable: string, file: string): string {
  const override = process.env[variable];
  if (override) return resolve(override);
  const here = dirname(fileURLToPath(import.meta.url));
  return resolve(here, '../../../native/build/Release', file);
}

const loaded = new Map<string, unknown>();

/**
 * The addon at `path`, once `node -e probeScript` (which requires it and exits non-zero where it
 * cannot be used, its reason first on stderr) has passed; `unavailable(path, reason)` is the
 * error for a missing file or a failed probe. Loaded once per path.
 */
export function loadProbedAddon<A>(path: string, probeScript: string, unavailable: (path: string, reason: string) => Error): A {
  if (loaded.has(path)) return loaded.get(path) as A;
  if (!existsSync(path)) throw unavailable(path, 'no such file');
  const probe = spawnSync(process.execPath, ['-e', probeScript], {
    encoding: 'utf8',
    timeout: 30_000,
  });
  if (probe.error || probe.status !== 0) {
    const why =
      probe.error?.message ??
      (probe.signal ? `the probe process died of ${probe.signal}` : probe.stderr.trim().split('\n').slice(0, 3).join(' ') || `exit ${probe.status}`);
    throw unavailable(path, `it does not load (${why})`);
  }
  const addon = createRequire(import.meta.url)(path) as A;
  loaded.set(path, addon);
  return addon;
}
