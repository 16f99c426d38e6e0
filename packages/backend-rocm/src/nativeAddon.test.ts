import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BackendUnavailableError } from '@hcsp/core';
import { afterEach, describe, expect, it } from 'vitest';
import { addonPath, loadNativeAddon, NativeAddonUnavailableError } from './nativeAddon.ts';

const saved = process.env.HCSP_NATIVE_ADDON;
afterEach(() => {
  if (saved === undefined) delete process.env.HCSP_NATIVE_ADDON;
  else process.env.HCSP_NATIVE_ADDON = saved;
});

describe('native addon loading', () => {
  it('a missing binary is a typed error naming the path searched and the build command', () => {
    process.env.HCSP_NATIVE_ADDON = '/nonexistent/hcsp_native.node';
    const err = (() => {
      try {
        loadNativeAddon();
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(NativeAddonUnavailableError);
    expect(err).toBeInstanceOf(BackendUnavailableError);
    expect((err as Error).message).toBe(
      'native addon unavailable at /nonexistent/hcsp_native.node: no such file. Build it with `npm run build:native` (or set HCSP_NATIVE_ADDON to a built hcsp_native.node)',
    );
  });

  it('a broken binary fails its probe in a child process, not in this one', () => {
    const dir = mkdtempSync(join(tmpdir(), 'hcsp-addon-'));
    const path = join(dir, 'hcsp_native.node');
    writeFileSync(path, 'not an ELF file');
    process.env.HCSP_NATIVE_ADDON = path;
    try {
      expect(() => loadNativeAddon()).toThrow(
        /native addon unavailable at .*hcsp_native\.node: it does not load \(.*\)\. Build it with `npm run build:native`/,
      );
      // the reason is the loader's ("file too short", "invalid ELF header"), not the source line of the probe that threw it
      expect(() => loadNativeAddon()).toThrow(/it does not load \(\/\S*hcsp_native\.node: [a-zA-Z ]+\)\. Build/);
    } finally {
      rmSync(dir, { recursive: true });
    }
  });

  it('the built addon loads from native/build and reports its vector unit', () => {
    delete process.env.HCSP_NATIVE_ADDON;
    expect(addonPath()).toMatch(/native\/build\/Release\/hcsp_native\.node$/);
    const info = loadNativeAddon().info();
    expect(['avx512', 'avx2', 'portable']).toContain(info.isa);
    expect(info.napiVersion).toBe(8);
  });

  it('a C++ exception in a GPU device method is a JavaScript error, not an abort of the process', () => {
    delete process.env.HCSP_NATIVE_ADDON;
    // the emulated device's describe() reads the thread pool, whose HCSP_NATIVE_THREADS check throws
    const script = `const a = require(${JSON.stringify(addonPath())}); const g = a.openGpu('emulated');
      try { g.describe(); console.log('no error'); } catch (e) { console.log(e.code + ': ' + e.message); }`;
    const r = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', env: { ...process.env, HCSP_NATIVE_THREADS: 'abc' } });
    expect(r.signal).toBeNull();
    expect(r.status).toBe(0);
    expect(r.stdout.trim()).toBe("HCSP_ATTR: HCSP_NATIVE_THREADS must be an integer in [1, 1024], got 'abc'");
  });
});
