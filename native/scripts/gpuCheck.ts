// The GPU check program (native/scripts/gpu-check.sh runs its bundle): on a machine with a
// GPU, (1) the cross-backend comparison of the rocm backend's GPU device against the CPU
// reference: every op case and every sub-layer case bit-exact with the reference-order GEMM and
// kernels, within the declared tolerance with the fast kernels and the vendor GEMMs (vendor,
// vendor-invariant), and the small config's whole stack at tp 4 (SP on and off); (2) a table
// last: the fused HC kernels' GB/s at full HC dimensions,
// T = 4096, against a device copy timed in the same run (each must reach 70% of it), each
// GEMM's TFLOP/s against the vendor GEMM's best on a square shape, and SP-on HC time per rank
// against SP-off at tp 2 (at most 1/tp + 15%); gpuCheckHc.ts has the HC steps. Between the
// two, one real RCCL/NCCL rank (world size 1) through the nccl communicator: its library's
// version, all-reduce, reduce-scatter and all-gather of a small bf16 tensor equal to the input
// bit for bit (nothing is added at world size 1), through the host-data calls and through the
// engine's device-buffer path (no staging, one host sync), and the seconds it took; a missing
// library is a failed step listing what was tried. Then the engine step: a Flash-Next layer
// pair run twice, its second run's counters. After the HC steps in the table: issue 24's fast
// kernels (chunked GDN, tiled attention, grouped MoE bf16 and FP8) against their thresholds,
// the cost model's prediction beside each measured kernel (gpuCheckModel.ts; --device-out FILE
// writes the measured device description), and SP on vs off at tp 2 bit for bit with the
// row-count-invariant vendor GEMM.
import {
  CpuBackend,
  FLASH_NEXT,
  MODEL_SUB_LAYERS,
  preparePrefill,
  Rng,
  runOnce,
  SMALL,
  SyntheticWeightSource,
  type Backend,
  type Graph,
  type RunResult,
  type Tensor,
} from '@hcsp/core';
import { beyondTolerance, describeDifferences, diffRuns } from '@hcsp/core/xcheck';
import { builtInDevice, parseDevice } from '@hcsp/core/cost-model';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { createRocmBackend, NcclCommunicator, NcclUnavailableError, type RocmBackend } from '@hcsp/backend-rocm';
import { median } from '@hcsp/bench';
import { hcBandwidthStep, spStep } from './gpuCheckHc.ts';
import { gdnStep } from './gpuCheckGdn.ts';
import { attentionStep } from './gpuCheckAttention.ts';
import { moeStep } from './gpuCheckMoe.ts';
import { moeFp8Step } from './gpuCheckMoeFp8.ts';
import { spInvariantStep } from './gpuCheckInvariant.ts';
import { formatModelRows, measuredDeviceJson, measuredVsPredicted, writeMeasuredDevice, type MeasuredKernel } from './gpuCheckModel.ts';
import type { Verdict } from './gpuCheckVerdict.ts';
import { deviceGemmRunner, exactGemmStep, hcMixGemmShapes } from './exactGemmStep.ts';
import { layerCases, OP_CASES, opCaseGraph } from '@hcsp/bench/cases';

const args = new Map<string, string>();
for (let i = 2; i < process.argv.length; i += 2) args.set(process.argv[i].replace(/^--/, ''), process.argv[i + 1]);
const device = args.get('device') as 'hip' | 'cuda' | 'emulated';
if (!['hip', 'cuda', 'emulated'].includes(device)) throw new Error(`gpu-check: --device must be hip, cuda or emulated, got '${device}'`);
const say = (s: string): void => void process.stderr.write(`gpu-check: ${s}\n`);

const reference = new CpuBackend();
const noWeights = new SyntheticWeightSource([], 0);
let failures = 0;

// the reference's run of each case, computed once for the several GEMM and kernel modes compared with it
const expectedRuns = new Map<string, Promise<RunResult>>();

async function compare(label: string, mode: string, backend: Backend, graph: Graph, feeds: Map<string, Tensor>, weights: SyntheticWeightSource): Promise<void> {
  if (!expectedRuns.has(label)) expectedRuns.set(label, runOnce(reference, graph, feeds, weights, { keep: 'all' }));
  const expected = await expectedRuns.get(label)!;
  const actual = await runOnce(backend, graph, feeds, weights, { keep: 'all' });
  const bad = beyondTolerance(diffRuns(graph, expected, actual).differences, backend);
  if (bad.length) {
    failures++;
    say(`FAIL ${label} (${mode})\n${describeDifferences(bad)}`);
  }
}

async function crossBackend(gemm: 'exact' | 'vendor' | 'vendor-invariant', kernels: 'exact' | 'fast'): Promise<string> {
  const what = `${gemm} GEMM, ${kernels} kernels`;
  if (device === 'emulated' && gemm !== 'exact') return `${what}: not on the emulated device`;
  const backend = await createRocmBackend({ device, gemm, kernels });
  const before = failures;
  let cases = 0;
  for (const c of OP_CASES) {
    const { graph, feeds } = opCaseGraph(c);
    await compare(`op ${c.name}`, what, backend, graph, feeds, noWeights);
    cases++;
  }
  for (const c of layerCases()) {
    await compare(`layer ${c.name}`, what, backend, c.graph, c.feeds, c.weights);
    cases++;
  }
  for (const sp of ['on', 'off'] as const) {
    const p = preparePrefill({ config: SMALL, tokens: 1100, tp: 4, sp, reduce: 'ring', seed: 1, subLayers: MODEL_SUB_LAYERS });
    await compare(`small stack tp 4 SP ${sp}`, what, backend, p.graph, p.feeds, p.weights as SyntheticWeightSource);
    cases++;
  }
  await backend.dispose();
  const bad = failures - before;
  return `${what}: ${cases - bad}/${cases} cases ${gemm === 'exact' && kernels === 'exact' ? 'bit-exact' : 'within the declared tolerance'} against the CPU reference`;
}

/** where a pip wheel or the ROCm tree keeps the library, when the loader's path does not have it */
function ncclFallbacks(): string[] {
  const found: string[] = [];
  if (device === 'hip') found.push('/opt/rocm/lib/librccl.so.1');
  if (device === 'cuda') {
    for (const base of ['/usr/local/lib', '/usr/lib']) {
      let entries: string[] = [];
      try {
        entries = readdirSync(base).filter((d) => /^python3/.test(d));
      } catch {
        continue;
      }
      for (const py of entries) for (const site of ['dist-packages', 'site-packages']) found.push(join(base, py, site, 'nvidia/nccl/lib/libnccl.so.2'));
    }
  }
  return found.filter((p) => existsSync(p));
}

const bytesOf = (t: Tensor): Buffer => Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength);

async function ncclRank(): Promise<string> {
  if (device === 'emulated') return 'nccl: not on the emulated device (no RCCL/NCCL)';
  const t0 = performance.now();
  const secs = () => ((performance.now() - t0) / 1000).toFixed(2);
  let backend: RocmBackend | null = null;
  try {
    backend = (await createRocmBackend({ device, gemm: 'exact' })) as RocmBackend;
    const gpu = backend.gpu!;
    let lib: ReturnType<typeof NcclCommunicator.libraryOf>;
    try {
      lib = NcclCommunicator.libraryOf(gpu);
    } catch (e) {
      const fallback = process.env.HCSP_NCCL_LIBRARY ? [] : ncclFallbacks();
      if (!(e instanceof NcclUnavailableError) || fallback.length === 0) throw e;
      say(`nccl: ${e.message}; trying ${fallback[0]}`);
      process.env.HCSP_NCCL_LIBRARY = fallback[0];
      lib = NcclCommunicator.libraryOf(gpu);
    }
    const comm = await NcclCommunicator.open({ gpu, rank: 0, size: 1, uniqueId: NcclCommunicator.uniqueId(gpu) });
    const shape = [64, 96];
    const x: Tensor = { dtype: 'bf16', shape, data: new Rng(13).fillBf16Normal(shape[0] * shape[1], 1) };
    const bad: string[] = [];
    let id = 1;
    for (const [op, attrs] of [
      ['allReduce', { tp: 1, algorithm: 'ring' }],
      ['reduceScatter', { tp: 1, algorithm: 'ring' }],
      ['allGather', { tp: 1 }],
    ] as const) {
      const [y] = await comm.collective({ id: id++, op, rank: null, inputs: [], outputs: [], attrs, scope: 'gpu-check nccl', layer: -1 }, [x]);
      const same = y.dtype === 'bf16' && y.shape.join() === shape.join() && bytesOf(y).equals(bytesOf(x));
      if (!same) bad.push(op);
    }
    // the engine's path: a one-rank graph whose collectives run on the run's device buffers
    // (no staging), twice; the second run must give the input back with one host sync
    const values = Object.fromEntries(
      (
        [
          ['x', 'input', null],
          ['b', 'intermediate', 0],
          ['c', 'intermediate', 0],
          ['d', 'intermediate', 0],
        ] as const
      ).map(([id, kind, rank]) => [id, { id, shape, dtype: 'bf16' as const, kind, rank }]),
    );
    const node = (id: number, op: string, inputs: string[], outputs: string[], attrs: Record<string, unknown>) => ({
      id,
      op,
      rank: null,
      inputs,
      outputs,
      attrs,
      scope: `gpu-check nccl ${op}`,
      layer: 0,
    });
    const graph: Graph = {
      tp: 1,
      rank: 0,
      values,
      nodes: [
        node(1, 'allReduce', ['x'], ['b'], { tp: 1, algorithm: 'ring' }),
        node(2, 'reduceScatter', ['b'], ['c'], { tp: 1, algorithm: 'ring' }),
        node(3, 'allGather', ['c'], ['d'], { tp: 1 }),
      ],
      inputs: ['x'],
      outputs: ['d'],
      meta: {},
    } as Graph;
    const session = await backend.prepare(graph, noWeights, { communicator: comm });
    let deviceLine = '';
    try {
      await session.run(new Map([['x', x]]));
      const r = await session.run(new Map([['x', x]]));
      const e = r.stats.engine!;
      const same = bytesOf(r.values.get('d')!).equals(bytesOf(x));
      const clean =
        e.transfers.stagingToDeviceBytes === 0 && e.transfers.stagingFromDeviceBytes === 0 && e.device!.hostSyncs === 1 && e.device!.deviceAllocations === 0;
      if (!same || !clean) {
        bad.push('device-buffer path');
        say(
          `FAIL nccl device path: ${same ? '' : 'output differs from the input; '}staging ${e.transfers.stagingToDeviceBytes}/${e.transfers.stagingFromDeviceBytes} bytes, ${e.device!.hostSyncs} host syncs, ${e.device!.deviceAllocations} allocations`,
        );
      }
      deviceLine = `; on device buffers: ${same && clean ? 'pass' : 'FAIL'} (${e.device!.hostSyncs} host sync, ${e.transfers.stagingToDeviceBytes + e.transfers.stagingFromDeviceBytes} staging bytes)`;
    } finally {
      await session.dispose();
    }
    await comm.destroy();
    if (bad.length) {
      failures++;
      say(`FAIL nccl: ${bad.join(', ')} of one rank did not give the input back bit for bit`);
    }
    return `nccl: ${lib.library} (${lib.path}), one rank (world size 1): all-reduce, reduce-scatter, all-gather of bf16[${shape}] ${bad.length ? `FAIL (${bad.join(', ')} differ)` : 'pass (bit-exact)'}${deviceLine}, ${secs()} s`;
  } catch (e) {
    failures++;
    // a missing library's message lists every name tried, with the loader's reason for each
    say(`FAIL nccl: ${(e as Error).message}`);
    return `nccl: FAIL: ${(e as Error).message}, ${secs()} s`;
  } finally {
    await backend?.dispose();
  }
}

async function table(): Promise<string[]> {
  const gpu = (await createRocmBackend({ device, gemm: device === 'emulated' ? 'exact' : 'vendor' })) as RocmBackend;
  const addon = gpu.addon;
  const lines = [`device: ${gpu.describe()}`];
  // the device copy: a 1 GiB reshape (a copy kernel), bytes read + written per second
  const copyElems = 1 << 29;
  const src = addon.upload('bf16', [copyElems], new Uint16Array(copyElems), gpu.gpu);
  const copyTimes: number[] = [];
  for (let r = 0; r < 6; r++) {
    const t0 = performance.now();
    const [y] = await addon.run('reshape', [src], { shape: [copyElems] }, 'exact', gpu.gpu);
    copyTimes.push((performance.now() - t0) / 1000);
    addon.free(y!);
  }
  addon.free(src);
  const copyGbps = (2 * copyElems * 2) / median(copyTimes.slice(1)) / 1e9;
  lines.push(`device copy: ${copyGbps.toFixed(1)} GB/s (1 GiB reshape, read + write, median of 5)`);
  // the fused HC kernels at T = 4096 against the copy (issue 22's threshold)
  for (const v of await hcBandwidthStep(gpu, copyGbps)) {
    lines.push(v.line);
    if (!v.pass) failures++;
  }
  const T = 16384;
  const width = FLASH_NEXT.hc.count * FLASH_NEXT.hiddenSize;
  // GEMMs: the HC mix's two shapes, each GEMM mode, against the vendor GEMM's best on a square shape
  const gemmTime = async (rows: number, inF: number, outF: number, gemm: 'exact' | 'vendor'): Promise<number> => {
    const rng = new Rng(rows + inF);
    const x = addon.upload('bf16', [rows, inF], rng.fillBf16Normal(rows * inF, 1), gpu.gpu);
    const w = addon.upload('bf16', [outF, inF], rng.fillBf16Normal(outF * inF, 0.02), gpu.gpu);
    const times: number[] = [];
    for (let r = 0; r < 4; r++) {
      const t0 = performance.now();
      const [y] = await addon.run('linear', [x, w], {}, gemm, gpu.gpu);
      times.push((performance.now() - t0) / 1000);
      addon.free(y!);
    }
    addon.free(x);
    addon.free(w);
    return median(times.slice(1));
  };
  const modes: ('exact' | 'vendor')[] = device === 'emulated' ? ['exact'] : ['vendor', 'exact'];
  const square = device === 'emulated' ? 512 : 8192;
  const best = await gemmTime(square, square, square, modes[0]);
  const bestTflops = (2 * square ** 3) / best / 1e12;
  lines.push(
    `GEMMs (${modes[0]} GEMM best on a square ${square}^3: ${bestTflops.toFixed(2)} TFLOP/s):`,
    '  shape                     gemm     TFLOP/s  of best',
  );
  const r = FLASH_NEXT.hc.lowRank + FLASH_NEXT.hc.count;
  for (const [inF, outF] of [
    [width, r],
    [FLASH_NEXT.hc.lowRank, width],
  ]) {
    for (const m of modes) {
      const s = await gemmTime(T, inF, outF, m);
      const tf = (2 * T * inF * outF) / s / 1e12;
      lines.push(
        `${`  [${T},${inF}] x [${inF},${outF}]`.padEnd(28)}${m.padEnd(8)} ${tf.toFixed(3).padStart(8)}  ${((tf / bestTflops) * 100).toFixed(1).padStart(6)}%`,
      );
    }
  }
  // the tiled exact GEMM at the HC mix's shapes (T = 4096; 64 rows on the emulated device) against
  // the vendor GEMM and the one-thread kernel in this run, with its thresholds (exactGemmStep.ts)
  const exactGemm = await exactGemmStep(
    deviceGemmRunner(addon, gpu.gpu!),
    hcMixGemmShapes(FLASH_NEXT, device === 'emulated' ? 64 : 4096),
    device !== 'emulated',
  );
  lines.push(...exactGemm.lines);
  for (const f of exactGemm.failures) {
    failures++;
    say(`FAIL ${f}`);
  }
  // SP on vs off: HC time per rank of an HC stack at Flash-Next dimensions, tp 2 (issue 22's threshold)
  const sp = await spStep(gpu);
  lines.push(sp.line);
  if (!sp.pass) failures++;
  // issue 24's production kernels (kernels 'fast') at Flash-Next shapes, T 4096, tp 1 (the small
  // config on the emulated device), each against its threshold; their seconds go to the model's table
  const measured: MeasuredKernel[] = [
    { name: 'device copy (1 GiB)', seconds: median(copyTimes.slice(1)), shape: { copyBytes: 2 * copyElems * 2 } },
    { name: `${modes[0]} GEMM ${square}^3`, seconds: best, shape: { gemm: [square, square, square], vendor: modes[0] === 'vendor' } },
  ];
  const small = device === 'emulated' ? { config: SMALL, T: 96, runs: 2 } : {};
  const kernelSteps: [op: string, run: () => Promise<Verdict[]>][] = [
    ['gdnRecurrence', () => gdnStep(gpu, bestTflops, small)],
    ['attnCausalQsa', () => attentionStep(gpu, bestTflops, small)],
    ['moeExperts', () => moeStep(gpu, copyGbps, small)],
    ['moeExpertsFp8Ptpc', () => moeFp8Step(gpu, copyGbps, small)],
  ];
  for (const [op, run] of kernelSteps) {
    for (const v of await run()) {
      lines.push(v.line);
      if (!v.pass) failures++;
      // the model prices the graph's ops; the FP8 experts are not in the bf16 graph it builds
      if (v.seconds !== undefined && op !== 'moeExpertsFp8Ptpc')
        measured.push({ name: `${op} (fast)`, seconds: v.seconds, shape: { op, tokens: small.T ?? 4096, kernels: 'fast' } });
    }
  }
  await gpu.dispose();
  // the cost model (hcsp model --engine hcsp) against what this run measured, on a device made of this run's ceilings
  const base = builtInDevice(device === 'hip' ? 'mi308x' : 'h200');
  const deviceJson = measuredDeviceJson(
    base,
    { copyGBps: copyGbps, matrixBf16Tflops: bestTflops },
    `gpu-check ${new Date().toISOString().slice(0, 10)} on ${device}`,
  );
  const modelDevice = parseDevice(deviceJson, 'gpu-check');
  lines.push(...formatModelRows(measuredVsPredicted(measured, modelDevice, small.config ?? FLASH_NEXT), modelDevice));
  const deviceOut = args.get('device-out');
  if (deviceOut) {
    writeMeasuredDevice(deviceOut, deviceJson);
    lines.push(`measured device description written to ${deviceOut} (hcsp model --device ${deviceOut})`);
  }
  // SP on vs off at tp 2 on one device, final outputs bit for bit: vendor-invariant must be identical (issue 24 item 4)
  for (const v of await spInvariantStep(device)) {
    lines.push(v.line);
    if (!v.pass) failures++;
  }
  return lines;
}

/**
 * The engine on this GPU: a Flash-Next decoder layer pair (layers 2 and 3: one GatedDeltaNet, one
 * QSA attention layer, each with its MoE; T 4096, tp 1, synthetic weights) prepared once and run
 * twice; the second run's counters (it must be one replay of the recorded run, allocate nothing
 * and wait once), its seconds, and
 * each layer's time from a third run that waits after every node. The emulated device runs the
 * small config's layers 2 and 3 instead (the Flash-Next pair takes minutes on a CPU).
 */
async function engineStep(): Promise<string[]> {
  const config = device === 'emulated' ? SMALL : FLASH_NEXT;
  const T = device === 'emulated' ? 512 : 4096;
  const p = preparePrefill({ config, tokens: T, tp: 1, sp: 'off', reduce: 'ring', seed: 3, subLayers: MODEL_SUB_LAYERS, layers: [2, 4] });
  const backend = (await createRocmBackend({ device, gemm: device === 'emulated' ? 'exact' : 'vendor' })) as RocmBackend;
  const lines: string[] = [];
  try {
    const t0 = performance.now();
    const session = await backend.prepare(p.graph, p.weights as SyntheticWeightSource);
    const prepareSeconds = (performance.now() - t0) / 1000;
    try {
      await session.run(p.feeds);
      const second = await session.run(p.feeds);
      const e = second.stats.engine!;
      const d = e.device!;
      const byLayer = new Map<number, number>();
      let last = performance.now();
      await session.run(p.feeds, {
        syncEachNode: true,
        onNode: (done) => {
          const now = performance.now();
          const layer = p.graph.nodes[done - 1].layer;
          byLayer.set(layer, (byLayer.get(layer) ?? 0) + (now - last) / 1000);
          last = now;
        },
      });
      const ok = d.deviceAllocations === 0 && d.deviceFrees === 0 && d.hostSyncs <= 1 && e.recorded;
      if (!ok) failures++;
      const vendor = backend.gpu?.vendorGemm?.();
      lines.push(
        `engine: ${config.name} layers 2-3 (GDN + attention, MoE each), T=${T}, tp 1: prepare ${prepareSeconds.toFixed(1)} s, second run ${second.stats.seconds.toFixed(4)} s ${ok ? 'pass' : 'FAIL (must be one replay of the recorded run, allocate nothing and sync at most once)'}`,
        `  second run: ${d.kernelLaunches} launches, ${d.hostSyncs} host syncs, ${d.deviceAllocations} device allocations, ${d.deviceFrees} frees, ${d.memsets} memsets, ${d.bytesToDevice} bytes to and ${d.bytesFromDevice} from the device; ${e.recorded ? 'one replay of the recorded run' : 'node by node'}, host enqueue ${(e.enqueueSeconds * 1000).toFixed(1)} ms, wait ${(e.waitSeconds * 1000).toFixed(1)} ms`,
        `  per layer (each node waited for): ${[...byLayer].map(([l, s]) => `${l < 0 ? 'embed/head' : `L${l}`} ${s.toFixed(4)} s`).join(', ')}`,
        ...(vendor
          ? [`  vendor GEMM: ${vendor.plans} plans, ${vendor.heuristicQueries} heuristic queries, ${vendor.fallbacks.length} shapes on the exact kernel`]
          : []),
      );
    } finally {
      await session.dispose();
    }
  } finally {
    await backend.dispose();
  }
  return lines;
}

const started = performance.now();
say(`cross-backend comparison on ${device}`);
const summary: string[] = [];
for (const [gemm, kernels] of [
  ['exact', 'exact'],
  ['exact', 'fast'],
  ['vendor', 'fast'],
  ['vendor-invariant', 'fast'],
] as const) {
  summary.push(await crossBackend(gemm, kernels));
}
say('one NCCL rank');
summary.push(await ncclRank());
say('engine');
const engineRows = await engineStep();
say('timing');
const rows = [...engineRows, ...(await table())];
console.log(['', 'gpu-check results', ...summary, ...rows, `total ${((performance.now() - started) / 1000).toFixed(0)} s`].join('\n'));
process.exit(failures ? 1 : 0);
