import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const script = join(dirname(fileURLToPath(import.meta.url)), 'gpu-check.sh');

describe('gpu-check.sh', () => {
  it('on a machine without a GPU, stops after finding Node with a clear "no GPU" message (exit 2)', () => {
    // nvidia-smi and rocminfo that find no device, first on PATH: the same answer on any machine
    const bin = mkdtempSync(join(tmpdir(), 'hcsp-nogpu-'));
    try {
      for (const tool of ['nvidia-smi', 'rocminfo']) {
        writeFileSync(join(bin, tool), '#!/bin/sh\necho "no devices found" >&2\nexit 6\n');
        chmodSync(join(bin, tool), 0o755);
      }
      const r = spawnSync('bash', [script], { encoding: 'utf8', env: { ...process.env, PATH: `${bin}:${process.env.PATH}` }, timeout: 60_000 });
      expect(r.status).toBe(2);
      expect(r.stderr).toMatch(/^gpu-check: node: .* \(v\d+\.\d+\.\d+\)$/m);
      expect(r.stderr).toMatch(
        /gpu-check: no GPU found: nvidia-smi lists none \(or is absent\) and rocminfo lists none \(or is absent\); this check needs an AMD or NVIDIA GPU/,
      );
    } finally {
      rmSync(bin, { recursive: true });
    }
  });
});
