import { spawnSync } from 'node:child_process';
import { cpuKernel, type Tensor } from '@hcsp/core';
import { describe, expect, it } from 'vitest';
import { canonicalAttnMoeCases } from '@hcsp/bench/cases';
import { addonPath, loadNativeAddon } from './nativeAddon.ts';

// The host device's attention and MoE routing reductions in canonical order v1 on every vector
// path this CPU has (HCSP_NATIVE_ISA: AVX-512, AVX2 or portable, one per process): the head
// norm's sum of squares (canonical_sumsq.h), attention's softmax l and the router's softmax sum
// (canonical::sumTerms over values the vector exps computed). Each path runs the shared cases
// (the pinned inputs where the sequential order gives other bits, and random ones past one
// 512-term step) in its own process and must give the CPU reference's bits.

const ISAS = ['portable', 'avx2', 'avx512'] as const;

// one op in a child process on the given vector unit: the outputs' bytes, base64
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
  const handles = req.inputs.map((t) => a.upload(t.dtype, t.shape, data(t)));
  const out = await a.run(req.op, handles, req.attrs, 'exact');
  const bytes = out.map((t) => Buffer.from(a.download(t)).toString('base64'));
  process.stdout.write(JSON.stringify({ isa: a.info().isa, bytes }));
})().catch((e) => { process.stderr.write(String(e?.message ?? e)); process.exit(1); });
`;

const base64 = (t: Tensor) => Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength).toString('base64');

function onHost(isa: string, op: string, inputs: Tensor[], attrs: Record<string, unknown>): { isa: string; bytes: string[] } {
  const wire = inputs.map((t) => ({ dtype: t.dtype, shape: t.shape, data: base64(t) }));
  const r = spawnSync(process.execPath, ['-e', CHILD, addonPath()], {
    input: JSON.stringify({ op, inputs: wire, attrs }),
    encoding: 'utf8',
    timeout: 60_000,
    env: { ...process.env, HCSP_NATIVE_ISA: isa },
  });
  if (r.status !== 0) throw new Error(`HCSP_NATIVE_ISA=${isa}: ${r.error?.message ?? r.stderr}`);
  return JSON.parse(r.stdout) as { isa: string; bytes: string[] };
}

describe('host attention and MoE routing: every vector path gives the reference bits (canonical order v1)', () => {
  const best = loadNativeAddon().info().isa;
  const isas = ISAS.slice(0, ISAS.indexOf(best as (typeof ISAS)[number]) + 1);

  for (const c of canonicalAttnMoeCases()) {
    it(c.name, () => {
      expect(isas).toContain(best);
      const inputs = c.inputs as Tensor[];
      const want = cpuKernel(c.op)(inputs, c.attrs).map((t) => base64(t!));
      for (const isa of isas) {
        const got = onHost(isa, c.op, inputs, c.attrs);
        expect(got.isa).toBe(isa);
        expect(got.bytes, `HCSP_NATIVE_ISA=${isa}`).toEqual(want);
      }
    });
  }
});
