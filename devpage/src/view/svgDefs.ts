// Shared SVG definitions: the hatch that marks padding rows.
import { s } from './dom.ts';

export function paddingPattern(): SVGDefsElement {
  return s(
    'defs',
    {},
    s(
      'pattern',
      { id: 'padding-hatch', width: 6, height: 6, patternUnits: 'userSpaceOnUse', patternTransform: 'rotate(45)' },
      s('rect', { width: 6, height: 6, fill: '#fee2e2' }),
      s('line', { x1: 0, y1: 0, x2: 0, y2: 6, stroke: '#dc2626', 'stroke-width': 3 }),
    ),
  );
}
