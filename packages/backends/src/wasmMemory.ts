// The webgpu backend's browser host loads playwright-core, which starts Node's HTTP client
// (undici), which instantiates WebAssembly; a WebAssembly memory reserves about 10 GiB of
// address space. Under `ulimit -v` that reservation fails inside undici, on a promise nobody
// awaits, and the process died with a raw RangeError stack. Probed before the import, so the
// refusal is one line that names the limit.
import { readFileSync } from 'node:fs';
import { BackendUnavailableError } from '@hcsp/core';

/** The process's address-space limit as /proc/self/limits states it, or null where unknown or unlimited. */
function addressSpaceLimit(): number | null {
  try {
    const line = readFileSync('/proc/self/limits', 'utf8')
      .split('\n')
      .find((l) => l.startsWith('Max address space'));
    const soft = line?.slice('Max address space'.length).trim().split(/\s+/)[0];
    return soft && /^\d+$/.test(soft) ? Number(soft) : null;
  } catch {
    return null;
  }
}

/** Throws BackendUnavailableError, naming the address-space limit, when this process cannot reserve WebAssembly memory. */
export function checkWasmMemory(backend: string): void {
  try {
    new WebAssembly.Memory({ initial: 1 });
  } catch (e) {
    if (!(e instanceof RangeError)) throw e;
    const limit = addressSpaceLimit();
    const under =
      limit === null ? "under this process's memory limits" : `under the address-space limit of ${limit} bytes (ulimit -v ${Math.floor(limit / 1024)})`;
    throw new BackendUnavailableError(
      backend,
      `${backend} backend: the browser host could not allocate: WebAssembly memory, which Node's HTTP client needs to reach the browser, cannot be reserved ${under}; raise or remove the limit (ulimit -v unlimited)`,
    );
  }
}
