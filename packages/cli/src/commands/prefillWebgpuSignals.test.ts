// A WebGPU prefill on the headless-Chromium host, interrupted: the browser's profile and
// artifact folders (all in one hcsp-chromium-<host>-<pid>-* folder) must go away, and the
// interruption must be reported as one ("browser has been closed" was the old report).
// After SIGKILL nothing can clean up: the next launch sweeps the dead process's folder.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromiumExecutable } from '@hcsp/backend-webgpu';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../../../', import.meta.url));

interface Running {
  child: ChildProcess;
  done: Promise<{ status: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }>;
}

function startPrefill(): Running {
  // T large enough that the run is still going when the browser is up
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', 'packages/cli/src/main.ts', 'prefill', '--backend', 'webgpu', '--config', 'tiny', '--tp', '2', '--tokens', '512', '--quiet'],
    { cwd: ROOT },
  );
  let stdout = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8').on('data', (s: string) => (stdout += s));
  child.stderr!.setEncoding('utf8').on('data', (s: string) => (stderr += s));
  const done = new Promise<{ status: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }>((resolve) =>
    child.on('close', (status, signal) => resolve({ status, signal, stdout, stderr })),
  );
  return { child, done };
}

/**
 * The child's temp folder once Playwright's profile is in it; null if the run ended on
 * dawn.node (a hardware adapter: no browser); a failure if it ended on Chromium without one.
 */
async function folderOf(r: Running): Promise<string | null> {
  const prefix = `hcsp-chromium-${hostname()}-${r.child.pid}-`;
  let ended: Awaited<Running['done']> | null = null;
  void r.done.then((d) => (ended = d));
  while (ended === null) {
    const name = readdirSync(tmpdir()).find((n) => n.startsWith(prefix));
    if (name && readdirSync(join(tmpdir(), name)).some((n) => n.startsWith('playwright_chromiumdev_profile-'))) return join(tmpdir(), name);
    await new Promise((w) => setTimeout(w, 20));
  }
  const { stdout, stderr } = ended as Awaited<Running['done']>;
  if (stdout.includes('dawn.node')) return null;
  throw new Error(`the run ended without a ${prefix}* folder holding the browser profile: ${stdout}${stderr}`);
}

/** Processes whose command line names `folder` (the browser's, via its profile path). */
function processesUsing(folder: string): number[] {
  const pids: number[] = [];
  for (const p of readdirSync('/proc').filter((n) => /^\d+$/.test(n))) {
    try {
      if (readFileSync(`/proc/${p}/cmdline`, 'latin1').includes(folder)) pids.push(Number(p));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

describe.skipIf(!existsSync(chromiumExecutable()))('an interrupted webgpu prefill (headless Chromium)', () => {
  it('SIGTERM: the browser is killed, its folders removed, "interrupted by SIGTERM", exit 143', async (ctx) => {
    const r = startPrefill();
    const folder = await folderOf(r);
    if (folder === null) ctx.skip(); // dawn.node on a hardware adapter: no browser to clean up
    r.child.kill('SIGTERM');
    const { status, stderr } = await r.done;
    expect(stderr).toBe('hcsp: interrupted by SIGTERM\n');
    expect(status).toBe(143);
    expect(existsSync(folder!)).toBe(false);
    await new Promise((w) => setTimeout(w, 200));
    expect(processesUsing(folder!)).toEqual([]);
  });

  it('SIGKILL leaves the folder; the next launch removes it because its process is dead', async (ctx) => {
    const first = startPrefill();
    const stale = await folderOf(first);
    if (stale === null) ctx.skip();
    first.child.kill('SIGKILL');
    await first.done;
    expect(existsSync(stale!)).toBe(true);
    const second = startPrefill();
    const own = await folderOf(second);
    expect(own).not.toBeNull();
    expect(existsSync(stale!)).toBe(false);
    second.child.kill('SIGINT');
    const { status, stderr } = await second.done;
    expect(stderr).toBe('hcsp: interrupted by SIGINT\n');
    expect(status).toBe(130);
    expect(existsSync(own!)).toBe(false);
  });
});
