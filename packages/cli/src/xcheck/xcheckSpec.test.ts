import { describe, expect, it } from 'vitest';
import { parseXcheckSpec, XCHECK_GPU_GEMM } from './xcheckSpec.ts';

const defaults = { sp: 'auto', reduce: 'ring' } as const;

describe('xcheck SPECs', () => {
  it("a GPU SPEC without gemm= runs the row-count-invariant vendor GEMM (SP on and off then compare the same rows' bits)", () => {
    expect(XCHECK_GPU_GEMM).toBe('vendor-invariant');
    expect(parseXcheckSpec('rocm:device=cuda:sp=on', defaults).backendOptions).toEqual({ device: 'cuda', gemm: 'vendor-invariant' });
    expect(parseXcheckSpec('rocm:device=hip', defaults).backendOptions).toEqual({ device: 'hip', gemm: 'vendor-invariant' });
  });

  it('a gemm= in the SPEC is kept, and the other devices keep their own default', () => {
    expect(parseXcheckSpec('rocm:device=cuda:gemm=vendor', defaults).backendOptions).toEqual({ device: 'cuda', gemm: 'vendor' });
    expect(parseXcheckSpec('rocm:device=hip:gemm=exact', defaults).backendOptions).toEqual({ device: 'hip', gemm: 'exact' });
    expect(parseXcheckSpec('rocm:device=emulated', defaults).backendOptions).toEqual({ device: 'emulated' });
    expect(parseXcheckSpec('rocm:device=host:gemm=blas', defaults).backendOptions).toEqual({ device: 'host', gemm: 'blas' });
    expect(parseXcheckSpec('cpu:sp=off', defaults).backendOptions).toEqual({});
  });

  it("ties= picks the top-k tie rule (absent: the contract's); another value names the allowed ones", () => {
    expect(parseXcheckSpec('cpu:contract=hf-eager:ties=lower-index', defaults).ties).toBe('lower-index');
    expect(parseXcheckSpec('rocm:device=host:ties=torch-cpu', defaults).ties).toBe('torch-cpu');
    expect(parseXcheckSpec('cpu:contract=hf-eager', defaults).ties).toBeNull();
    expect(() => parseXcheckSpec('cpu:ties=stable', defaults)).toThrow(
      '--compare: SPEC "cpu:ties=stable": ties must be one of lower-index|torch-cpu, got "stable"',
    );
  });

  it('an unknown gemm mode names the allowed ones', () => {
    expect(() => parseXcheckSpec('rocm:device=cuda:gemm=fastest', defaults)).toThrow(
      /gemm must be one of exact, blas, vendor, vendor-invariant, got 'fastest'/,
    );
  });
});
