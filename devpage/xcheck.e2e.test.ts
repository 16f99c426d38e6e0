// The dev page's xcheck section end to end: vite serves the page, headless Chromium with the
// flags the project's Chromium host uses for WebGPU (SwiftShader here) loads it, runs a live
// tiny SP on vs off comparison on the page's own WebGPU device and draws its heatmaps; a
// report written here from a real CPU diffNamed run is loaded through the file input and by
// a drop; a bad file gets a clear message; a browser without WebGPU says so and runs the CPU
// reference. DEVPAGE_SCREENSHOT=<file.png> keeps screenshots.
import { CHROMIUM_WEBGPU_ARGS } from '@hcsp/backend-webgpu';
import { CpuBackend } from '@hcsp/core';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type Page } from 'playwright-core';
import { createServer, type ViteDevServer } from 'vite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { liveReport, liveSides, runLiveSide, type LiveRequest } from './src/xcheck/liveXcheck.ts';
import { worstTensors } from './src/xcheck/xcheckHeatmap.ts';

const CHROMIUM = '/usr/bin/chromium';
const configFile = fileURLToPath(new URL('../vite.config.ts', import.meta.url));
const shot = (page: Page, suffix: string): Promise<unknown> | undefined =>
  process.env.DEVPAGE_SCREENSHOT ? page.screenshot({ path: process.env.DEVPAGE_SCREENSHOT.replace(/\.png$/, `-${suffix}.png`), fullPage: true }) : undefined;

function collectErrors(page: Page): string[] {
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(m.text());
  });
  return errors;
}

describe('dev page xcheck in Chromium', () => {
  let server: ViteDevServer;
  let browser: Browser;
  let url: string;

  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) throw new Error(`the dev page xcheck test needs Chromium at ${CHROMIUM}`);
    server = await createServer({ configFile, server: { port: 0, host: '127.0.0.1' }, logLevel: 'error' });
    await server.listen();
    url = server.resolvedUrls!.local[0];
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_WEBGPU_ARGS, headless: true });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  it('runs a live tiny SP on vs off comparison on WebGPU and draws its layer x rank heatmap', async () => {
    const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    const errors = collectErrors(page);
    await page.goto(url);
    expect(await page.locator('#xc-webgpu').isHidden()).toBe(true);
    await page.selectOption('select[name=config]', 'tiny');
    await page.fill('input[name=tokens]', '37');
    await page.selectOption('select[name=tp]', '4');
    await page.selectOption('select[name=reduce]', 'ring');
    await page.selectOption('select[name=xcPair]', 'sp');
    await page.selectOption('select[name=xcBackend]', 'webgpu');
    await page.click('#xc-run');
    await expect.poll(() => page.locator('#xc-status').textContent(), { timeout: 45_000, interval: 250 }).toMatch(/^(Ran|Live run failed)/);
    expect(await page.locator('#xc-error').textContent()).toBe('');
    const ran = (await page.locator('#xc-status .xc-ran').textContent())!;
    expect(ran).toMatch(
      /^Ran on WebGPU \(adapter: .*swiftshader.*\): run a webgpu:sp=on:reduce=ring [\d.]+ s, run b webgpu:sp=off:reduce=ring [\d.]+ s \(tiny, T 37, tp 4\)\.$/i,
    );
    expect(await page.locator('#xc-view .xc-runs td.xc-device').allTextContents()).toEqual([
      expect.stringMatching(/^webgpu on this browser \(.*swiftshader/i),
      expect.stringMatching(/^webgpu on this browser/),
    ]);

    // layer x rank: tiny's 4 layers and the MTP drafter's 2 steps (10 rows) x 4 ranks x (partial, out)
    const cells = page.locator('#xc-view svg.xc-rank-grid rect.xc-cell');
    expect(await cells.count()).toBe(10 * 4 * 2);
    const grid = await cells.evaluateAll((rects) =>
      rects.map((r) => ({
        layer: Number(r.getAttribute('data-layer')),
        rank: Number(r.getAttribute('data-rank')),
        value: Number(r.getAttribute('data-value')),
      })),
    );
    for (let layer = 0; layer < 4; layer++)
      for (let rank = 0; rank < 4; rank++) expect(grid.filter((c) => c.layer === layer && c.rank === rank)).toHaveLength(4);
    // the ring reorders the sums once SP starts (layer 2): WebGPU keeps the CPU reference's orders, so the same cells differ as on the CPU
    expect(grid.filter((c) => c.layer < 2).every((c) => c.value === 0)).toBe(true);
    expect(grid.filter((c) => c.layer >= 2 && c.value > 0).length).toBeGreaterThan(0);
    expect(await page.locator('#xc-view svg.xc-kind-grid rect.xc-cell').count()).toBeGreaterThan(20);
    expect(await page.locator('#xc-view .xc-headline').textContent()).toMatch(
      /^webgpu:sp=on:reduce=ring against webgpu:sp=off:reduce=ring: \d+ of \d+ compared tensors differ/,
    );
    expect(await page.locator('#xc-view table.xc-worst tbody tr').count()).toBeGreaterThan(0);

    // the metric switch redraws the same cells
    await page.selectOption('select[name=xcMetric]', 'fraction');
    const fractions = await cells.evaluateAll((rects) => rects.map((r) => Number(r.getAttribute('data-value'))));
    expect(fractions).toHaveLength(80);
    expect(fractions.every((f) => f >= 0 && f <= 1)).toBe(true);
    await shot(page, 'xcheck-webgpu');
    expect(errors).toEqual([]);
  }, 60_000);

  it('runs WebGPU against the CPU reference (worker) on the same graph: bit-identical', async () => {
    const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    const errors = collectErrors(page);
    await page.goto(url);
    await page.selectOption('select[name=config]', 'tiny');
    await page.fill('input[name=tokens]', '19');
    await page.selectOption('select[name=tp]', '2');
    await page.selectOption('select[name=xcPair]', 'backends');
    expect(await page.locator('select[name=xcBackend]').isDisabled()).toBe(true);
    await page.selectOption('select[name=sp]', 'on');
    await page.click('#xc-run');
    await expect.poll(() => page.locator('#xc-status').textContent(), { timeout: 45_000, interval: 250 }).toMatch(/^(Ran|Live run failed)/);
    expect(await page.locator('#xc-error').textContent()).toBe('');
    expect(await page.locator('#xc-status .xc-ran').textContent()).toMatch(
      /^Ran run a on WebGPU \(adapter: .*swiftshader.*\), run b on the CPU reference \(worker\): run a webgpu:sp=on:reduce=ring [\d.]+ s, run b cpu:sp=on:reduce=ring/i,
    );
    expect(await page.locator('#xc-view svg.xc-rank-grid rect.xc-cell').count()).toBe(10 * 2 * 2);
    expect(await page.locator('#xc-view .xc-headline').textContent()).toMatch(
      /^webgpu:sp=on:reduce=ring against cpu:sp=on:reduce=ring: all \d+ compared tensors are bit-identical\.$/,
    );
    expect(errors).toEqual([]);
  }, 60_000);

  it('loads a report from a real CPU diffNamed run (file input and drop), and names what is wrong with a bad file', async () => {
    const r: LiveRequest = { config: 'tiny', tokens: 19, tp: 2, seed: 3, reduce: 'ring', pair: 'sp', backend: 'cpu', sp: 'on' };
    const { a, b } = liveSides({ ...r, tp: 4 });
    const cpu = new CpuBackend();
    const r4 = { ...r, tp: 4 };
    const report = liveReport(r4, await runLiveSide(cpu, r4, a), await runLiveSide(cpu, r4, b));
    // as `hcsp xcheck --json` would name it, with one tensor given a float64 attribution
    report.pairs[0].a = 'cpu:sp=on';
    report.pairs[0].b = 'cpu:sp=off';
    const differing = worstTensors(report.pairs[0], 1)[0];
    differing.exact = {
      a: { maxAbs: 0.01, meanAbs: 0.001, maxUlp: 3 },
      b: { maxAbs: 0.001, meanAbs: 0.0001, maxUlp: 0.5 },
      fartherA: differing.differing,
      fartherB: 0,
      attributed: 'a',
    };
    report.exact = true;
    const json = JSON.stringify(report);

    const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    const errors = collectErrors(page);
    await page.goto(url);
    await page.setInputFiles('input[name=xcFile]', { name: 'report.json', mimeType: 'application/json', buffer: Buffer.from(json) });
    await expect.poll(() => page.locator('#xc-status').textContent()).toMatch(/^Loaded report\.json: 1 pair, \d+ tensors\.$/);
    expect(await page.locator('#xc-view .xc-source').textContent()).toMatch(/^Report report\.json: config tiny, T 19, tp 4, seed 3/);
    const cells = page.locator('#xc-view svg.xc-rank-grid rect.xc-cell');
    expect(await cells.count()).toBe(10 * 4 * 2);
    expect(await page.locator('#xc-view .xc-attribution').textContent()).toMatch(
      /^Against the float64 evaluation \(1 tensors\): 1 differing tensors are attributed to cpu:sp=on/,
    );
    expect(await page.locator('#xc-view table.xc-worst td.xc-attr.a').count()).toBe(1);

    // a click on a cell opens that tensor's rows and its float64 attribution
    const detail = page.locator('#xc-view .xc-pair .xc-detail');
    expect(await detail.isHidden()).toBe(true);
    await page.locator(`#xc-view rect.xc-cell[data-name="${differing.name}"]`).first().click();
    await detail.waitFor({ state: 'visible' });
    expect(await detail.locator('h4').textContent()).toContain(differing.name);
    expect(await detail.locator('.xc-detail-exact').textContent()).toMatch(
      /^own error against float64: a \(cpu:sp=on\) 3 row-scaled ulp .*run a is farther from float64 on \d+ of \d+ differing elements/,
    );
    expect(await detail.locator('table.xc-detail-rows tbody tr').count()).toBeGreaterThan(0);
    expect(await detail.locator('table.xc-detail-rows tbody tr').count()).toBe(differing.rows.differing.filter((d) => d > 0).length);
    await detail.locator('.xc-detail-close').click();
    expect(await detail.isHidden()).toBe(true);

    // a bad file: the message names the field, and the drawn report stays
    const bad = JSON.parse(json);
    bad.pairs[0].tensors[2].differing = 'many';
    await page.setInputFiles('input[name=xcFile]', { name: 'bad.json', mimeType: 'application/json', buffer: Buffer.from(JSON.stringify(bad)) });
    await expect
      .poll(() => page.locator('#xc-error').textContent())
      .toBe(`bad.json: not an xcheck report: pairs[0].tensors[2].differing must be a number, got string "many"`);
    await page.setInputFiles('input[name=xcFile]', { name: 'notes.txt', mimeType: 'text/plain', buffer: Buffer.from('hello') });
    await expect.poll(() => page.locator('#xc-error').textContent()).toMatch(/^notes\.txt is not JSON: /);
    expect(await cells.count()).toBe(80);

    // the same report dropped on the page, at tp 2 (bit-identical): a smaller grid, no differing cell
    const { a: a2, b: b2 } = liveSides(r);
    const report2 = liveReport(r, await runLiveSide(cpu, r, a2), await runLiveSide(cpu, r, b2));
    await page.evaluate((text) => {
      const dt = new DataTransfer();
      dt.items.add(new File([text], 'tp2.json', { type: 'application/json' }));
      document.getElementById('xc-drop')!.dispatchEvent(new DragEvent('drop', { dataTransfer: dt, bubbles: true, cancelable: true }));
    }, JSON.stringify(report2));
    await expect.poll(() => page.locator('#xc-status').textContent()).toMatch(/^Loaded tp2\.json/);
    expect(await page.locator('#xc-error').isHidden()).toBe(true);
    expect(await cells.count()).toBe(10 * 2 * 2);
    expect(await page.locator('#xc-view svg.xc-rank-grid rect.xc-differs').count()).toBe(0);
    expect(await page.locator('#xc-view .xc-headline').textContent()).toMatch(/all \d+ compared tensors are bit-identical/);
    await shot(page, 'xcheck-report');
    expect(errors).toEqual([]);
  }, 60_000);

  it('without WebGPU says so and runs the CPU reference in the worker', async () => {
    const plain = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu', '--disable-webgpu'] });
    try {
      const page = await plain.newPage({ viewport: { width: 1400, height: 1000 } });
      const errors = collectErrors(page);
      await page.goto(url);
      await page.selectOption('select[name=config]', 'tiny');
      const note = page.locator('#xc-webgpu');
      // Debian's chromium without the flags has navigator.gpu but no adapter: the run says so when WebGPU is asked for
      if (await page.evaluate(() => 'gpu' in navigator && !!navigator.gpu)) {
        await page.selectOption('select[name=xcBackend]', 'webgpu');
        await page.click('#xc-run');
        await expect.poll(() => page.locator('#xc-status').textContent(), { timeout: 20_000 }).toMatch(/^(Ran|Live run failed)/);
      }
      await note.waitFor({ state: 'visible' });
      expect(await note.textContent()).toMatch(/WebGPU is unavailable/);
      await page.click('#xc-use-cpu');
      expect(await page.locator('select[name=xcBackend]').inputValue()).toBe('cpu');
      await page.fill('input[name=tokens]', '19');
      await page.selectOption('select[name=tp]', '2');
      await page.click('#xc-run');
      await expect.poll(() => page.locator('#xc-status').textContent(), { timeout: 20_000, interval: 200 }).toMatch(/^(Ran|Live run failed)/);
      expect(await page.locator('#xc-status .xc-ran').textContent()).toMatch(
        /^Ran on the CPU reference \(worker\): run a cpu:sp=on:reduce=\w+ [\d.]+ s, run b cpu:sp=off/,
      );
      expect(await page.locator('#xc-view svg.xc-rank-grid rect.xc-cell').count()).toBe(10 * 2 * 2);
      expect(errors.filter((e) => !/WebGPU|GPU/i.test(e))).toEqual([]);

      // a browser with no navigator.gpu at all: said on load, the CPU reference chosen
      const bare = await plain.newPage();
      await bare.addInitScript(() => Object.defineProperty(Navigator.prototype, 'gpu', { get: () => undefined, configurable: true }));
      await bare.goto(url);
      expect(await bare.locator('#xc-webgpu').textContent()).toMatch(
        /^WebGPU is unavailable in this browser: navigator\.gpu is undefined\. Chromium on Linux needs --enable-unsafe-webgpu\. The CPU reference runs the same graph in a worker: Use the CPU reference instead$/,
      );
      expect(await bare.locator('select[name=xcBackend]').inputValue()).toBe('cpu');
    } finally {
      await plain.close();
    }
  }, 60_000);
});
