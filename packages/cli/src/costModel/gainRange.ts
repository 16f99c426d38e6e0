// The range of the predicted gain that the device figures' ranges imply (`hcsp model`): a
// built-in device's figures are derived, not published, and each carries the range it may
// take. The two graphs (SP off, on) are built once and priced at each figure's ends, one
// figure at a time, which gives each figure's direction; then at the two corners that put
// every figure at its end of lower and of higher gain. The range spans all those prices
// (the gain is taken as monotone in each figure within its range; the corners and the single
// ends are all priced, so a figure whose direction flips still widens the range).
import { buildCostGraph, engineOptions, priceGraph, type Device, type DeviceFigureName, type Efficiency, type ForecastInput } from '@hcsp/core/cost-model';

export interface GainRange {
  low: number;
  high: number;
  /** the figures with a range of more than one value, which the range varies */
  figures: DeviceFigureName[];
}

function withFigures(device: Device, values: Partial<Record<DeviceFigureName, number>>): Device {
  const figures = { ...device.figures };
  for (const [name, value] of Object.entries(values) as [DeviceFigureName, number][]) figures[name] = { ...figures[name]!, value };
  return { ...device, figures };
}

export function gainRange(i: ForecastInput, efficiency: Efficiency): GainRange {
  const tokens = i.isl * i.concurrency;
  const variant = { mtpDrafter: i.mtpDrafter, qsaSelection: i.qsaSelection };
  const off = buildCostGraph(i.config, tokens, i.tp, 'off', i.mtp, i.env, variant).graph;
  const on = buildCostGraph(i.config, tokens, i.tp, 'on', i.mtp, i.env, variant).graph;
  const gain = (device: Device) => {
    const o = { config: i.config, device, efficiency, requests: i.concurrency, requestTokens: i.isl, ...engineOptions(i) };
    // as core's forecast writes it (tokens/s on over off), to the last bit
    return tokens / priceGraph(on, o).seconds / (tokens / priceGraph(off, o).seconds);
  };
  const figures = (Object.keys(i.device.figures) as DeviceFigureName[]).filter((n) => {
    const r = i.device.figures[n]?.range;
    return r !== undefined && r[0] !== r[1];
  });
  const gains = [gain(i.device)];
  const lowCorner: Partial<Record<DeviceFigureName, number>> = {};
  const highCorner: Partial<Record<DeviceFigureName, number>> = {};
  for (const n of figures) {
    const [a, b] = i.device.figures[n]!.range!;
    const ga = gain(withFigures(i.device, { [n]: a }));
    const gb = gain(withFigures(i.device, { [n]: b }));
    gains.push(ga, gb);
    lowCorner[n] = ga <= gb ? a : b;
    highCorner[n] = ga <= gb ? b : a;
  }
  if (figures.length > 0) gains.push(gain(withFigures(i.device, lowCorner)), gain(withFigures(i.device, highCorner)));
  return { low: Math.min(...gains), high: Math.max(...gains), figures };
}
