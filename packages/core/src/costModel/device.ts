// Device descriptions for the cost model: every figure a value with its source. The three
// built-in devices are data (devices/*.json, each figure sourced, unpublished ones marked
// with the range they may take); a user passes measured figures in the same format
// (`hcsp model --device FILE.json`), validated here with errors naming the bad field.
import h200 from './devices/h200.json' with { type: 'json' };
import mi300x from './devices/mi300x.json' with { type: 'json' };
import mi308x from './devices/mi308x.json' with { type: 'json' };

/** One figure of a device: its value, where it comes from, and (when not published) its range. */
export interface DeviceFigure {
  value: number;
  source: string;
  /** false when no vendor publishes it (derived or assumed; `source` says how) */
  published: boolean;
  range?: [number, number];
}

export const DEVICE_FIGURES = {
  matrixBf16Tflops: 'peak dense BF16 matrix rate, TFLOP/s',
  matrixFp8Tflops: 'peak dense FP8 matrix rate, TFLOP/s',
  vectorFp32Tflops: 'peak FP32 vector rate, TFLOP/s (the non-GEMM ops)',
  hbmTBps: 'peak HBM bandwidth, TB/s',
  memoryGB: 'HBM capacity, GB',
  computeUnits: 'CU (AMD) or SM (NVIDIA) count',
  linkGBps: 'per-GPU link bandwidth for collectives, one direction, GB/s',
  linkPeerGBps: "per-peer link bandwidth, one direction, GB/s (topology 'mesh' only: a collective over tp GPUs uses tp-1 links)",
  collectiveLatencyUs: 'latency floor of one collective, us',
  kernelLaunchUs: 'launch overhead per kernel, us',
  gemmTileRows: "rows of the GEMM library's output tile (wave quantization and tile padding)",
  gemmTileCols: "columns of the GEMM library's output tile",
  gemmFraction: "the GEMM library's achieved fraction of the matrix peak at a well-shaped large GEMM (measured), in (0, 1]",
  memoryLatencyUs: 'HBM load-to-use latency, us (the memory ramp of every kernel; one round trip of a latency-bound step)',
  clockGHz: 'engine clock while computing, GHz (dependent-operation latency of latency-bound kernels)',
  dependentOpCycles: 'cycles between two dependent vector operations of one thread',
  lanesPerCu: 'threads one CU (SM) must hold to issue on every vector lane each cycle',
  hostSyncUs: "one host synchronization with the device (hcsp's engine), us",
} as const;
export type DeviceFigureName = keyof typeof DEVICE_FIGURES;
/**
 * Figures a file may leave out: the mesh's per-peer links (switch topology), and the physics
 * terms' figures (issue 27): without its figures a term is not applied (the roofline's
 * value), and `--engine hcsp` names the figures it lacks.
 */
export type OptionalFigureName =
  | 'linkPeerGBps'
  | 'gemmTileRows'
  | 'gemmTileCols'
  | 'gemmFraction'
  | 'memoryLatencyUs'
  | 'clockGHz'
  | 'dependentOpCycles'
  | 'lanesPerCu'
  | 'hostSyncUs';
const REQUIRED: readonly DeviceFigureName[] = [
  'matrixBf16Tflops',
  'matrixFp8Tflops',
  'vectorFp32Tflops',
  'hbmTBps',
  'memoryGB',
  'computeUnits',
  'linkGBps',
  'collectiveLatencyUs',
  'kernelLaunchUs',
];

/** How the GPUs are linked: 'switch' (NVSwitch: every GPU its full link bandwidth to any peer set) or 'mesh' (xGMI: one link per peer). */
export type LinkTopology = 'switch' | 'mesh';

/**
 * Achieved fractions of the roofline (the model's named efficiency factors): `hc` for the
 * hyper-connection kernels, `other` for every other compute kernel. 1 = peak.
 */
export interface Efficiency {
  hc: number;
  other: number;
}

export interface Device {
  name: string;
  description: string;
  topology: LinkTopology;
  figures: Record<DeviceFigureName, DeviceFigure | undefined> & Record<Exclude<DeviceFigureName, OptionalFigureName>, DeviceFigure>;
  /** where the description came from: 'built-in' or the file path */
  origin: string;
  /** efficiency factors a measured file may carry (absent: the model's calibration decides) */
  efficiency?: Efficiency;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * Validates a device description (parsed JSON). `origin` names it in errors and is the
 * default source of figures given without one (a plain number is a figure measured by the
 * file's author). Every error names the field: `device FILE: figures.hbmTBps.value must be ...`.
 */
export function parseDevice(json: unknown, origin: string): Device {
  const fail = (field: string, msg: string): never => {
    throw new Error(`device ${origin}: ${field} ${msg}`);
  };
  if (!isObject(json)) fail('(top level)', `must be a JSON object, got ${JSON.stringify(json)?.slice(0, 40)}`);
  const o = json as Record<string, unknown>;
  const known = new Set(['name', 'description', 'topology', 'figures', 'efficiency']);
  for (const k of Object.keys(o)) if (!known.has(k)) fail(k, `is not a device field (fields: ${[...known].join(', ')})`);
  if (typeof o.name !== 'string' || o.name === '') fail('name', `must be a non-empty string, got ${JSON.stringify(o.name)}`);
  if (o.description !== undefined && typeof o.description !== 'string') fail('description', 'must be a string');
  const topology = o.topology ?? 'switch';
  if (topology !== 'switch' && topology !== 'mesh') fail('topology', `must be "switch" or "mesh", got ${JSON.stringify(o.topology)}`);
  if (!isObject(o.figures)) fail('figures', `must be an object with the figures ${REQUIRED.join(', ')}`);
  const figs = o.figures as Record<string, unknown>;
  for (const k of Object.keys(figs))
    if (!Object.hasOwn(DEVICE_FIGURES, k)) fail(`figures.${k}`, `is not a known figure (known: ${Object.keys(DEVICE_FIGURES).join(', ')})`);
  const figures = {} as Record<DeviceFigureName, DeviceFigure | undefined>;
  const fraction = (name: DeviceFigureName, v: number, f: string): number => {
    if (name === 'gemmFraction' && v > 1) fail(f, `must be a fraction in (0, 1], got ${v}`);
    return v;
  };
  const need = topology === 'mesh' ? [...REQUIRED, 'linkPeerGBps' as const] : REQUIRED;
  for (const name of Object.keys(DEVICE_FIGURES) as DeviceFigureName[]) {
    const raw = figs[name];
    const field = `figures.${name}`;
    if (raw === undefined) {
      if (need.includes(name)) fail(field, `is missing (${DEVICE_FIGURES[name]})`);
      continue;
    }
    const positive = (v: unknown, f: string): number => {
      if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0) fail(f, `must be a positive finite number, got ${JSON.stringify(v)}`);
      return v as number;
    };
    if (typeof raw === 'number') {
      figures[name] = { value: fraction(name, positive(raw, field), field), source: `measured: ${origin}`, published: false };
      continue;
    }
    if (!isObject(raw)) fail(field, `must be a number or {"value": number, "source": string}, got ${JSON.stringify(raw)}`);
    const r = raw as Record<string, unknown>;
    for (const k of Object.keys(r))
      if (!['value', 'source', 'published', 'range'].includes(k)) fail(`${field}.${k}`, 'is not a figure field (value, source, published, range)');
    const value = fraction(name, positive(r.value, `${field}.value`), `${field}.value`);
    if (r.source !== undefined && (typeof r.source !== 'string' || r.source === '')) fail(`${field}.source`, 'must be a non-empty string');
    if (r.published !== undefined && typeof r.published !== 'boolean') fail(`${field}.published`, 'must be true or false');
    let range: [number, number] | undefined;
    if (r.range !== undefined) {
      const g = r.range as unknown[];
      if (!Array.isArray(g) || g.length !== 2 || !g.every((x) => typeof x === 'number' && Number.isFinite(x) && x > 0) || (g[0] as number) > (g[1] as number)) {
        fail(`${field}.range`, `must be [low, high] with 0 < low <= high, got ${JSON.stringify(r.range)}`);
      }
      range = [g[0] as number, g[1] as number];
    }
    figures[name] = {
      value,
      source: (r.source as string | undefined) ?? `measured: ${origin}`,
      published: (r.published as boolean | undefined) ?? r.source !== undefined,
      ...(range ? { range } : {}),
    };
  }
  let efficiency: Efficiency | undefined;
  if (o.efficiency !== undefined) {
    if (!isObject(o.efficiency)) fail('efficiency', 'must be an object {"hc": fraction, "other": fraction}');
    const e = o.efficiency as Record<string, unknown>;
    for (const k of Object.keys(e)) if (k !== 'hc' && k !== 'other') fail(`efficiency.${k}`, 'is not an efficiency factor (hc, other)');
    const frac = (k: 'hc' | 'other'): number => {
      const v = e[k] ?? 1;
      if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0 || v > 1) fail(`efficiency.${k}`, `must be a fraction in (0, 1], got ${JSON.stringify(v)}`);
      return v as number;
    };
    efficiency = { hc: frac('hc'), other: frac('other') };
  }
  return {
    name: o.name as string,
    description: (o.description as string | undefined) ?? '',
    topology: topology as LinkTopology,
    figures: figures as Device['figures'],
    origin,
    ...(efficiency ? { efficiency } : {}),
  };
}

const BUILT_IN: Record<string, unknown> = { mi308x, mi300x, h200 };
export const BUILT_IN_DEVICES: readonly string[] = Object.freeze(Object.keys(BUILT_IN));

/** A built-in device by name (mi308x, mi300x, h200). */
export function builtInDevice(name: string): Device {
  const json = BUILT_IN[name];
  if (!json) throw new Error(`unknown device '${name}': built-in devices are ${BUILT_IN_DEVICES.join(', ')}, or pass a device description FILE.json`);
  return parseDevice(json, 'built-in');
}

/** Link bandwidth one collective over tp GPUs gets, bytes/s per direction per GPU. */
export function linkBytesPerSecond(device: Device, tp: number): number {
  const f = device.figures;
  const perGpu = f.linkGBps.value;
  if (device.topology === 'mesh') return Math.min(perGpu, f.linkPeerGBps!.value * Math.max(1, tp - 1)) * 1e9;
  return perGpu * 1e9;
}
