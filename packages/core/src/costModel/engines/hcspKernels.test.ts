import { describe, expect, it } from 'vitest';
import { FLASH_NEXT, SMALL } from '../../config/presets.ts';
import { GraphBuilder } from '../../graph/graphBuilder.ts';
import { allOpDefs } from '../../graph/ops/registry.ts';
import { hcspKernelSeconds, priceGraph } from '../costModel.ts';
import { builtInDevice, parseDevice } from '../device.ts';
import { buildCostGraph } from '../forecast.ts';
import { HCSP_KERNELS, KERNELS_MODES } from './hcspKernels.ts';

const PEAK = { hc: 1, other: 1 };

describe('--engine hcsp: the declared kernels (issue 27)', () => {
  it('declares only ops the graph has, each in both kernels modes', () => {
    const ops = new Set(allOpDefs().map((d) => d.name));
    for (const [op, modes] of Object.entries(HCSP_KERNELS)) {
      expect(ops.has(op)).toBe(true);
      for (const m of KERNELS_MODES) expect(typeof modes[m]).toBe('function');
    }
  });

  for (const [config, tokens, tp, requests] of [
    [FLASH_NEXT, 8192, 4, 2],
    [SMALL, 1024, 2, 1],
  ] as const) {
    it(`${config.name} T ${tokens} tp ${tp}: hcsp's engine is never predicted faster than the roofline, node by node and in all`, () => {
      const device = builtInDevice('mi308x');
      for (const sp of ['off', 'on'] as const) {
        const { graph } = buildCostGraph(config, tokens, tp, sp, true);
        const base = { config, device, efficiency: PEAK, requests, requestTokens: tokens / requests };
        const roof = priceGraph(graph, base);
        for (const kernels of ['fast', 'exact'] as const) {
          const h = priceGraph(graph, { ...base, engine: 'hcsp', kernels });
          expect(h.seconds).toBeGreaterThan(roof.seconds);
          h.nodes.forEach((n, k) => {
            expect(n.seconds).toBeGreaterThanOrEqual(roof.nodes[k].seconds);
          });
          // every collective waits for the host once more
          const coll = h.nodes.filter((n) => n.cls === 'collective');
          coll.forEach((n) => {
            expect(n.seconds).toBeCloseTo(roof.nodes.find((r) => r.id === n.id)!.seconds + 20e-6, 12);
          });
        }
      }
    }, 60_000);
  }

  it('a declared kernel is never priced below the roofline of its op: the floor, then its launches and syncs', () => {
    const device = builtInDevice('mi308x');
    const nothing = {
      source: 'x',
      launches: 2,
      threads: 1,
      vectorFlops: 0,
      fp64Flops: 0,
      bytes: 0,
      chain: 0,
      stepOps: 0,
      stepMemoryTrips: 0,
      hostSyncs: 1,
      scratchBytes: 0,
    };
    // 1 ms of roofline, 2 launches of 5 us, one 20 us host sync
    expect(hcspKernelSeconds(nothing, 1e-3, device)).toBeCloseTo(1e-3 + 10e-6 + 20e-6, 15);
    // one thread of the 80 x 256 the vector units need: 1 GFLOP at 43 TFLOP/s / 20480
    expect(hcspKernelSeconds({ ...nothing, vectorFlops: 1e9, hostSyncs: 0 }, 0, device)).toBeCloseTo((1e9 / 43e12) * 20480 + 10e-6, 12);
  });

  it("the GDN recurrence's serial chain: T dependent steps exact, T/64 chunks fast (hand-computed)", () => {
    const device = builtInDevice('mi308x');
    const tokens = 65536;
    const { graph } = buildCostGraph(FLASH_NEXT, tokens, 4, 'off', false);
    const at = (kernels: 'exact' | 'fast') =>
      priceGraph(graph, { config: FLASH_NEXT, device, efficiency: PEAK, requests: 1, requestTokens: tokens, engine: 'hcsp', kernels }).nodes.find(
        (n) => n.op === 'gdnRecurrence',
      )!.seconds;
    // one step: 3 dk = 384 dependent operations x 8 cycles at 2.1 GHz, plus one 1 us memory round trip
    const step = (384 * 8) / 2.1e9 + 1e-6;
    expect(at('exact')).toBeGreaterThanOrEqual(tokens * step);
    expect(at('fast')).toBeGreaterThanOrEqual((tokens / 64) * step);
    expect(at('fast')).toBeLessThan(at('exact') / 10);
  }, 60_000);

  it('the FP8 experts (moeExpertsFp8Ptpc) are priced as declared, never below their roofline, the tiled kernel reading the weights once per 16 rows', () => {
    const { hiddenSize: H } = SMALL;
    const { numExperts: E, topK, intermediate: I } = SMALL.moe;
    const T = 1024;
    const b = new GraphBuilder(1);
    const xq = b.input('xq', [T, H], 'fp8e4m3fn');
    const sx = b.input('sx', [T], 'f32');
    const ids = b.input('ids', [T, topK], 'i32');
    const w = b.input('w', [T, topK], 'bf16');
    const q1 = b.weight({ name: 'gu.q' }, [E * 2 * I, H], 'fp8e4m3fn');
    const s1 = b.weight({ name: 'gu.s' }, [E * 2 * I], 'f32');
    const q2 = b.weight({ name: 'dn.q' }, [E * H, I], 'fp8e4m3fn');
    const s2 = b.weight({ name: 'dn.s' }, [E * H], 'f32');
    const y = b.value('routed', [T, H], 'f32', 0);
    const attrs = { firstExpert: 0, numLocal: E, intermediate: I, format: 'e4m3fn', style: 'reciprocal', scaleOrder: 'weightFirst' };
    b.node({ op: 'moeExpertsFp8Ptpc', rank: 0, layer: 0, scope: 'mlp.experts', inputs: [xq, sx, ids, w, q1, s1, q2, s2], outputs: [y], attrs });
    b.markOutput(y);
    const graph = b.build();
    const base = { config: SMALL, device: builtInDevice('mi308x'), efficiency: PEAK, requests: 1, requestTokens: T };
    const roof = priceGraph(graph, base).nodes[0].seconds;
    const exact = priceGraph(graph, { ...base, engine: 'hcsp', kernels: 'exact' }).nodes[0].seconds;
    const fast = priceGraph(graph, { ...base, engine: 'hcsp', kernels: 'fast' }).nodes[0].seconds;
    expect(fast).toBeGreaterThanOrEqual(roof);
    expect(exact).toBeGreaterThan(fast);
  });

  it('a device file without the engine figures names them', () => {
    const json = JSON.parse(
      JSON.stringify({
        name: 'x',
        figures: {
          matrixBf16Tflops: 1,
          matrixFp8Tflops: 1,
          vectorFp32Tflops: 1,
          hbmTBps: 1,
          memoryGB: 1,
          computeUnits: 1,
          linkGBps: 1,
          collectiveLatencyUs: 1,
          kernelLaunchUs: 1,
        },
      }),
    );
    const device = parseDevice(json, 'x.json');
    const { graph } = buildCostGraph(SMALL, 64, 2, 'off', false);
    expect(() => priceGraph(graph, { config: SMALL, device, efficiency: PEAK, requests: 1, requestTokens: 64, engine: 'hcsp' })).toThrow(
      'device x.json: --engine hcsp needs the figures clockGHz, dependentOpCycles, lanesPerCu, memoryLatencyUs, hostSyncUs (see the built-in devices)',
    );
    // the roofline engine prices it without them (no physics term applies)
    expect(priceGraph(graph, { config: SMALL, device, efficiency: PEAK, requests: 1, requestTokens: 64 }).seconds).toBeGreaterThan(0);
  });
});
