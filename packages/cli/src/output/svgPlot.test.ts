import { describe, expect, it } from 'vitest';
import { heatmapSvg, linePlotSvg } from './svgPlot.ts';

const count = (s: string, re: RegExp): number => (s.match(re) ?? []).length;

describe('linePlotSvg', () => {
  it('draws every point of every series, with a legend naming them, as standalone SVG', async () => {
    const svg = await linePlotSvg({
      title: 'prefill time against T',
      x: { label: 'T', log: true },
      y: { label: 'ms', log: true },
      series: [
        {
          name: 'cpu',
          points: [
            [1024, 12],
            [2048, 25],
            [4096, 53],
          ],
        },
        {
          name: 'native',
          points: [
            [1024, 3],
            [2048, 6.5],
          ],
        },
      ],
    });
    expect(svg.startsWith('<svg')).toBe(true);
    expect(svg.trimEnd().endsWith('</svg>')).toBe(true);
    expect(count(svg, /aria-roledescription="point"/g)).toBe(5);
    // Each point's own label carries its values and series.
    expect(svg).toContain('aria-label="cpu: T 4096, ms 53"');
    expect(svg).toContain('aria-label="native: T 2048, ms 6.5"');
    // Two series: one line each and a legend.
    expect(count(svg, /aria-roledescription="line mark"/g)).toBe(2);
    expect(svg).toContain('aria-roledescription="legend"');
    expect(svg).toContain('for a log scale');
    expect(svg).toContain('>prefill time against T</text>');
    // Nothing to fetch.
    expect(svg).not.toMatch(/\s(?:xlink:)?href="(?!#)/);
    expect(svg).not.toMatch(/<image|<script|@import|url\((?!#)/);
  });

  it('leaves out points a log axis cannot show, and says so; symlog takes zero', async () => {
    const log = await linePlotSvg({
      title: 't',
      x: { label: 'layer' },
      y: { label: 'ulp', log: true },
      series: [
        {
          name: 's',
          points: [
            [0, 0],
            [1, 4],
            [2, NaN],
          ],
        },
      ],
    });
    expect(count(log, /aria-roledescription="point"/g)).toBe(1);
    expect(log).toContain('2 points not shown');
    const symlog = await linePlotSvg({
      title: 't',
      x: { label: 'layer' },
      y: { label: 'ulp', scale: 'symlog' },
      series: [
        {
          name: 's',
          points: [
            [0, 0],
            [1, 4],
          ],
        },
      ],
    });
    expect(count(symlog, /aria-roledescription="point"/g)).toBe(2);
    expect(symlog).not.toContain('not shown');
    // One series: no legend.
    expect(symlog).not.toContain('aria-roledescription="legend"');
  });

  it('escapes text and refuses two series of one name', async () => {
    const svg = await linePlotSvg({
      title: 'a <b>&',
      x: { label: 'x' },
      y: { label: 'y' },
      series: [
        { name: '<i>"s"', points: [[1, 1]] },
        { name: 'b', points: [] },
      ],
    });
    expect(svg).toContain('a &lt;b&gt;&amp;');
    expect(svg).not.toContain('<b>');
    expect(svg).not.toContain('<i>');
    await expect(
      linePlotSvg({
        title: 't',
        x: { label: 'x' },
        y: { label: 'y' },
        series: [
          { name: 'a', points: [] },
          { name: 'a', points: [] },
        ],
      }),
    ).rejects.toThrow('plot "t": the name "a" appears twice');
  });
});

describe('heatmapSvg', () => {
  it('draws a cell per value, none for null, with a colour legend; ids unique across charts', async () => {
    const map = {
      title: 'max ulp',
      x: { label: 'layer', labels: ['0', '1', '2'] },
      y: { label: 'tensor', labels: ['attn.out', 'mlp.out'] },
      values: [
        [0, 1, 2],
        [null, 5, 7],
      ],
      colour: { label: 'ulp', scale: 'symlog' as const },
    };
    const a = await heatmapSvg(map);
    const b = await heatmapSvg(map);
    expect(count(a, /aria-roledescription="rect mark"/g)).toBe(5);
    expect(a).toContain('aria-label="layer: 1; tensor: mlp.out; ulp: 5"');
    expect(a).toContain('Gradient legend');
    const ids = (s: string): string[] => [...s.matchAll(/\bid="([^"]+)"/g)].map((m) => m[1]);
    expect(ids(a).length).toBeGreaterThan(0);
    expect(ids(a).filter((id) => ids(b).includes(id))).toEqual([]);
    // References follow their ids.
    for (const m of a.matchAll(/url\(#([^)]+)\)/g)) expect(ids(a)).toContain(m[1]);
    // Given a prefix, the same chart is the same text.
    const c = await heatmapSvg({ ...map, idPrefix: 'h-' });
    expect(await heatmapSvg({ ...map, idPrefix: 'h-' })).toBe(c);
    expect(ids(c)).toEqual(['h-0']);
  });

  it('refuses values of the wrong shape', async () => {
    await expect(
      heatmapSvg({ title: 'h', x: { label: 'x', labels: ['a', 'b'] }, y: { label: 'y', labels: ['c'] }, values: [[1]], colour: { label: 'v' } }),
    ).rejects.toThrow('heatmap "h": values must be 1 rows of 2');
  });
});
