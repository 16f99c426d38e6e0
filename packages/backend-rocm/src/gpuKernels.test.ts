import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { allOpDefs } from '@hcsp/core';
import { describe, expect, it } from 'vitest';
import { loadNativeAddon } from './nativeAddon.ts';

// The GPU kernels' compile checks (no GPU needed): `npm test` runs native/scripts/
// build-gpu-kernels.sh for gfx940 (hipcc), gfx942 (clang-19) and sm_90 (nvcc) first; these
// tests hold every target's code objects to the kernels the sources declare.
const native = resolve(dirname(fileURLToPath(import.meta.url)), '../../../native');
const sources = join(native, 'src/gpu/kernels');
const built = join(native, 'build/gpu');
const TARGETS: Record<string, string> = { gfx940: 'hsaco', gfx942: 'hsaco', sm_90: 'cubin' };

/** the kernels a .cu file defines: `HCSP_GLOBAL void name(` */
function kernelsOf(file: string): string[] {
  return [...readFileSync(join(sources, file), 'utf8').matchAll(/^HCSP_GLOBAL\s+void\s+(\w+)\s*\(/gm)].map((m) => m[1]);
}

describe('GPU kernels', () => {
  const files = readdirSync(sources).filter((f) => f.endsWith('.cu'));

  it('have a launcher for every op a device runs (the same set as the host kernels)', () => {
    const k = loadNativeAddon().kernels();
    // and the one host op the native devices run themselves (DeviceOps.runsHostOp: the 64-bit n-gram hash)
    expect([...k.gpuPerRank].sort()).toEqual(
      allOpDefs()
        .filter((d) => !d.collective && (!d.host || d.name === 'pleNgramIds'))
        .map((d) => d.name)
        .sort(),
    );
    expect([...k.gpuCollective].sort()).toEqual(
      allOpDefs()
        .filter((d) => d.collective)
        .map((d) => d.name)
        .sort(),
    );
  });

  for (const [arch, ext] of Object.entries(TARGETS)) {
    it(`every kernel is in the ${arch} code objects`, () => {
      for (const f of files) {
        const bytes = readFileSync(join(built, arch, f.replace(/\.cu$/, `.${ext}`)));
        for (const name of kernelsOf(f)) expect(bytes.includes(Buffer.from(`${name}\0`)), `${name} (${f}) in ${arch}`).toBe(true);
      }
    });
  }

  it('a kernel that stops compiling fails the build, naming the file and the target', () => {
    const dir = mkdtempSync(join(tmpdir(), 'hcsp-gpuk-'));
    try {
      writeFileSync(join(dir, 'broken.cu'), `#include "${join(native, 'src/gpu/vendor.h')}"\nHCSP_GLOBAL void hcsp_broken(float* y) { y[0] = undeclared; }\n`);
      const r = spawnSync('bash', [join(native, 'scripts/build-gpu-kernels.sh'), 'sm_90'], {
        encoding: 'utf8',
        env: { ...process.env, HCSP_GPU_KERNELS_DIR: dir, HCSP_GPU_OUT_DIR: join(dir, 'out') },
      });
      expect(r.status).toBe(1);
      expect(r.stderr).toMatch(/build-gpu-kernels: broken\.cu does not compile for sm_90:/);
      expect(r.stderr).toMatch(/undeclared/);
    } finally {
      rmSync(dir, { recursive: true });
    }
  }, 60_000);
});
