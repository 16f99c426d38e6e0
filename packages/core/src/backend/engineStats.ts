import type { DeviceCounters, EngineStats } from './backend.ts';

// EngineStats as a fixed list of numbers and back: how ranks in other processes send theirs
// over a control plane of float64 values (hcsp launch, mpirun).

const DEVICE_KEYS: readonly (keyof DeviceCounters)[] = [
  'kernelLaunches',
  'hostSyncs',
  'deviceAllocations',
  'deviceFrees',
  'memsets',
  'copiesToDevice',
  'bytesToDevice',
  'copiesFromDevice',
  'bytesFromDevice',
];
const TRANSFER_KEYS: readonly (keyof EngineStats['transfers'])[] = ['inputBytes', 'outputBytes', 'stagingToDeviceBytes', 'stagingFromDeviceBytes'];
const PLAN_KEYS: readonly (keyof EngineStats['memoryPlan'])[] = ['poolBytes', 'peakBytes', 'blocks'];

/** how many numbers engineStatsToNumbers gives */
export const ENGINE_STATS_NUMBERS = 5 + TRANSFER_KEYS.length + 1 + DEVICE_KEYS.length + PLAN_KEYS.length;

export function engineStatsToNumbers(e: EngineStats): number[] {
  return [
    e.prepareSeconds,
    e.enqueueSeconds,
    e.waitSeconds,
    e.hostOpSeconds,
    e.recorded ? 1 : 0,
    ...TRANSFER_KEYS.map((k) => e.transfers[k]),
    e.device === null ? 0 : 1,
    ...DEVICE_KEYS.map((k) => e.device?.[k] ?? 0),
    ...PLAN_KEYS.map((k) => e.memoryPlan[k]),
  ];
}

export function engineStatsFromNumbers(v: ArrayLike<number>): EngineStats {
  if (v.length !== ENGINE_STATS_NUMBERS) throw new Error(`engine stats: ${v.length} numbers, expected ${ENGINE_STATS_NUMBERS}`);
  let i = 0;
  const next = (): number => v[i++];
  const prepareSeconds = next();
  const enqueueSeconds = next();
  const waitSeconds = next();
  const hostOpSeconds = next();
  const recorded = next() === 1;
  const transfers = Object.fromEntries(TRANSFER_KEYS.map((k) => [k, next()])) as EngineStats['transfers'];
  const hasDevice = next() === 1;
  const device = Object.fromEntries(DEVICE_KEYS.map((k) => [k, next()])) as unknown as DeviceCounters;
  const memoryPlan = Object.fromEntries(PLAN_KEYS.map((k) => [k, next()])) as EngineStats['memoryPlan'];
  return { prepareSeconds, enqueueSeconds, recorded, waitSeconds, hostOpSeconds, transfers, device: hasDevice ? device : null, memoryPlan };
}
