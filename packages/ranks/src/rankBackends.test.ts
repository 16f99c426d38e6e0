import { BACKENDS, type BackendEntry } from '@hcsp/backends';
import { describe, expect, it } from 'vitest';
import { COMMUNICATORS, communicatorKind } from './communicators.ts';
import { checkRankBackend, rankBackendFlags, rankBackends } from './rankBackends.ts';

describe("the backend list's communicator declarations", () => {
  it('name only known communicators, and option values the backend has', () => {
    for (const b of BACKENDS) {
      for (const [mode, needs] of Object.entries(b.comm ?? {})) {
        expect(communicatorKind(mode), `${b.name} declares --comm ${mode}`).toBeDefined();
        for (const [k, vs] of Object.entries(needs)) for (const v of vs) expect(b.options[k], `${b.name}: --comm ${mode} needs ${k}=${v}`).toContain(v);
      }
    }
  });

  it('give every communicator a backend to run on', () => {
    for (const c of COMMUNICATORS) expect(rankBackends(c.mode).length, c.mode).toBeGreaterThan(0);
  });
});

describe('checkRankBackend: words its refusal from the declarations', () => {
  it('takes a declared backend', () => {
    for (const c of COMMUNICATORS) for (const b of rankBackends(c.mode)) expect(() => checkRankBackend(b.name, c.mode)).not.toThrow();
  });

  it('refuses the others, naming the backends (and options) that run the communicator', () => {
    expect(() => checkRankBackend('cpu', 'nccl')).toThrow("--comm nccl runs a rank's part on --backend rocm with --device hip or cuda, not --backend cpu");
    expect(() => checkRankBackend('webgpu', 'mpi')).toThrow("--comm mpi runs a rank's part on --backend cpu or rocm, not --backend webgpu");
    expect(rankBackendFlags('nccl')).toBe('--backend rocm --device hip or cuda');
  });

  it('a backend added to the list runs ranks by declaring its communicators there, nothing else', () => {
    const fresh: BackendEntry = {
      name: 'fresh',
      summary: '',
      options: { device: ['a', 'b'] },
      comm: { nccl: { device: ['b'] } },
      create: () => Promise.reject(new Error('unused')),
    };
    const list = [...BACKENDS, fresh];
    expect(() => checkRankBackend('fresh', 'nccl', list)).not.toThrow();
    expect(() => checkRankBackend('fresh', 'mpi', list)).toThrow("--comm mpi runs a rank's part on --backend cpu or rocm, not --backend fresh");
    expect(() => checkRankBackend('cpu', 'nccl', list)).toThrow('on --backend rocm with --device hip or cuda or fresh with --device b, not --backend cpu');
  });
});
