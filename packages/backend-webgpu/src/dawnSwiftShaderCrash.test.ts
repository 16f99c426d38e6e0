import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

// Why the Chromium page hosts the WebGPU device on GPU-less machines: dawn.node on the
// SwiftShader Vulkan ICD dies on a >= 1 MiB upload after the JS thread was busy ~100 ms
// (architecture.md). The reproduction runs in a CHILD process so the crash cannot take the
// test runner down. The bug shows three ways, all timing-dependent: a crash (SIGSEGV, or
// SIGABRT from a pthread mutex assertion: 3 of 3 runs on this machine, webgpu 0.6.2), a
// hang in the upload (the same mutex, deadlocked instead of asserted: seen once in CI under
// load, killed after 60 s), or, on a fixed dawn.node, a correct completion. The test accepts
// those and logs which; it fails when the child never got the SwiftShader adapter, stopped
// before the upload, exited 0 without completing, or read back wrong bytes. If the log says
// "completed", nodeDevice.ts's refusal of software adapters can be revisited.
const SWIFTSHADER_ICD = '/usr/lib/chromium/vk_swiftshader_icd.json';
const CHILD = fileURLToPath(new URL('../../../test/support/dawnCrashChild.ts', import.meta.url));
const UPLOAD_BYTES = 4 << 20;
const BUSY_MS = 100;
const CHILD_DEADLINE_MS = 60_000;

interface ChildOutcome {
  code: number | null;
  signal: NodeJS.Signals | null;
  stages: Record<string, unknown>[];
  stderr: string;
  timedOut: boolean;
}

function runChild(): Promise<ChildOutcome> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', CHILD, String(UPLOAD_BYTES), String(BUSY_MS)], {
      env: { ...process.env, VK_ICD_FILENAMES: SWIFTSHADER_ICD },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, CHILD_DEADLINE_MS);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      const stages = stdout
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as Record<string, unknown>);
      resolve({ code, signal, stages, stderr, timedOut });
    });
  });
}

describe('dawn.node on SwiftShader (crash reproduction)', () => {
  it('uploading >= 4 MiB after a busy JS thread crashes the process, hangs in the upload, or completes correctly', async () => {
    expect(existsSync(SWIFTSHADER_ICD), `${SWIFTSHADER_ICD} is missing: run 'npm run setup:system' (Debian chromium)`).toBe(true);
    const out = await runChild();
    const last = out.stages.at(-1);
    expect(out.stages[0]?.stage, `the child got no SwiftShader adapter: ${out.stderr.slice(-2000)}`).toBe('adapter');
    const diagnostics = out.stderr
      .split('\n')
      .filter((l) => l.trim() && !l.includes('XDG_RUNTIME_DIR'))
      .slice(-3)
      .join(' | ');
    const upload = `${UPLOAD_BYTES} B upload after ${BUSY_MS} ms busy`;
    if (last?.stage === 'completed') {
      // completed; a hang after this point (device teardown) is the same bug, reported with it
      expect(last.mismatches, 'dawn.node completed but read back wrong bytes').toBe(0);
      console.log(`dawn.node + SwiftShader: ${upload} COMPLETED correctly on this machine${out.timedOut ? ', then hung in teardown' : ''}`);
    } else {
      expect(last?.stage, `the child stopped before it reached the upload (${out.timedOut ? 'hung' : `exit ${out.code}, signal ${out.signal}`})`).toBe(
        'uploading',
      );
      if (out.timedOut) {
        console.log(`dawn.node + SwiftShader: ${upload} HUNG in the upload (killed after ${CHILD_DEADLINE_MS / 1000} s)`);
      } else {
        // died: by a signal, or an abnormal exit (std::system_error, assertion -> SIGABRT = 134)
        expect(out.code === 0, `the child exited 0 without completing: ${JSON.stringify(out.stages)}`).toBe(false);
        console.log(
          `dawn.node + SwiftShader: ${upload} CRASHED the process (exit code ${out.code}, signal ${out.signal}${diagnostics ? `; stderr: ${diagnostics}` : ''})`,
        );
      }
    }
  }, 90_000);
});
