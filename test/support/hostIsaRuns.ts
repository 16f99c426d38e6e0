// The host device's vector paths (HCSP_NATIVE_ISA: AVX-512, AVX2 or portable, one per process,
// chosen once): ops run in a child process on a given path, for the tests that each path gives
// the CPU reference's bits.
import { spawnSync } from 'node:child_process';
import type { Tensor } from '@hcsp/core';
import { addonPath, loadNativeAddon } from '../../packages/backend-rocm/src/nativeAddon.ts';

const ISAS = ['portable', 'avx2', 'avx512'] as const;

// the ops in a child process on the given vector unit: each one's outputs' bytes, base64
const CHILD = `
const a = require(process.argv[1]);
const req = JSON.parse(require('fs').readFileSync(0, 'utf8'));
(async () => {
  const view = { bf16: Uint16Array, i32: Int32Array, f32: Float32Array };
  const data = (t) => {
    const b = Buffer.from(t.data, 'base64');
    const u = new view[t.dtype](b.length / view[t.dtype].BYTES_PER_ELEMENT);
    new Uint8Array(u.buffer).set(b);
    return u;
  };
  const results = [];
  for (const c of req.runs) {
    const handles = c.inputs.map((t) => (t ? a.upload(t.dtype, t.shape, data(t)) : null));
    const out = await a.run(c.op, handles, c.attrs, 'exact');
    results.push(out.map((t) => Buffer.from(a.download(t)).toString('base64')));
  }
  process.stdout.write(JSON.stringify({ isa: a.info().isa, results }));
})().catch((e) => { process.stderr.write(String(e?.message ?? e)); process.exit(1); });
`;

/** A tensor's bytes, base64 (how the child reports outputs). */
export const base64 = (t: Tensor): string => Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength).toString('base64');

/** The addon's best vector path on this CPU, and every path up to it (the ones this CPU can run). */
export function hostIsas(): { best: string; isas: string[] } {
  const best = loadNativeAddon().info().isa;
  return { best, isas: ISAS.slice(0, ISAS.indexOf(best as (typeof ISAS)[number]) + 1) };
}

/** One op on given inputs (null: an absent optional port). */
export interface IsaRun {
  op: string;
  inputs: (Tensor | null)[];
  attrs: Record<string, unknown>;
}

/** The runs, in order, in one child process forced onto `isa`: the path it took and each run's outputs' bytes (base64). */
export function runOnHostIsa(isa: string, runs: IsaRun[], timeoutMs: number): { isa: string; results: string[][] } {
  const wire = runs.map((c) => ({ op: c.op, attrs: c.attrs, inputs: c.inputs.map((t) => (t ? { dtype: t.dtype, shape: t.shape, data: base64(t) } : null)) }));
  const r = spawnSync(process.execPath, ['-e', CHILD, addonPath()], {
    input: JSON.stringify({ runs: wire }),
    encoding: 'utf8',
    timeout: timeoutMs,
    env: { ...process.env, HCSP_NATIVE_ISA: isa },
  });
  if (r.status !== 0) throw new Error(`HCSP_NATIVE_ISA=${isa}: ${r.error?.message ?? r.stderr}`);
  return JSON.parse(r.stdout) as { isa: string; results: string[][] };
}
