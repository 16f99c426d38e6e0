import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

// Why the Chromium page hosts the WebGPU device on GPU-less machines: dawn.node on the
// SwiftShader Vulkan ICD dies on a >= 1 MiB upload after the JS thread was busy ~100 ms
// (architecture.md). The reproduction runs in a CHILD process so the crash cannot take the
// test runner down. Decision: the test asserts the child either crashed or completed with
// correct data (never a hang, never wrong bytes) and logs which; it does not demand the
// crash, because a crash is timing-dependent and a fixed dawn.node is not a failure of this
// project. On this machine (webgpu 0.6.2) it crashed 3 of 3 times (SIGSEGV, or SIGABRT from
// a pthread mutex assertion). If the log says "completed", nodeDevice.ts's refusal of
// software adapters can be revisited.
const SWIFTSHADER_ICD = '/usr/lib/chromium/vk_swiftshader_icd.json';
const CHILD = fileURLToPath(new URL('../../../test/support/dawnCrashChild.ts', import.meta.url));
const UPLOAD_BYTES = 4 << 20;
const BUSY_MS = 100;

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
    }, 60_000);
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
  it('uploading >= 4 MiB after a busy JS thread crashes the process, or completes correctly', async () => {
    expect(existsSync(SWIFTSHADER_ICD), `${SWIFTSHADER_ICD} is missing: run 'npm run setup:system' (Debian chromium)`).toBe(true);
    const out = await runChild();
    expect(out.timedOut, 'the dawn.node child hung for 60 s').toBe(false);
    const last = out.stages.at(-1);
    expect(out.stages[0]?.stage, `the child got no SwiftShader adapter: ${out.stderr.slice(-2000)}`).toBe('adapter');
    const diagnostics = out.stderr
      .split('\n')
      .filter((l) => l.trim() && !l.includes('XDG_RUNTIME_DIR'))
      .slice(-3)
      .join(' | ');
    if (last?.stage === 'completed' && out.code === 0) {
      expect(last.mismatches, 'dawn.node completed but read back wrong bytes').toBe(0);
      console.log(`dawn.node + SwiftShader: ${UPLOAD_BYTES} B upload after ${BUSY_MS} ms busy COMPLETED correctly on this machine (no crash this time)`);
    } else {
      // died: by a signal, or an abnormal exit (std::system_error, assertion -> SIGABRT = 134)
      expect(out.code === 0, `the child exited 0 without completing: ${JSON.stringify(out.stages)}`).toBe(false);
      expect(last?.stage, 'the child died before it reached the upload').toBe('uploading');
      console.log(
        `dawn.node + SwiftShader: ${UPLOAD_BYTES} B upload after ${BUSY_MS} ms busy CRASHED the process ` +
          `(exit code ${out.code}, signal ${out.signal}${diagnostics ? `; stderr: ${diagnostics}` : ''})`,
      );
    }
  }, 90_000);
});
