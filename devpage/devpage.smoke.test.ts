// The page end to end: vite serves it, headless Chromium loads it, draws a plan, runs a
// small case in the worker and draws the comparison. DEVPAGE_SCREENSHOT=<file.png> keeps
// a full-page screenshot for a human to look at.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser } from 'playwright-core';
import { createServer, type ViteDevServer } from 'vite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const CHROMIUM = '/usr/bin/chromium';
const configFile = fileURLToPath(new URL('../vite.config.ts', import.meta.url));

describe('dev page in Chromium', () => {
  let server: ViteDevServer;
  let browser: Browser;
  let url: string;

  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) throw new Error(`the dev page smoke test needs Chromium at ${CHROMIUM}`);
    server = await createServer({ configFile, server: { port: 0, host: '127.0.0.1' }, logLevel: 'error' });
    await server.listen();
    url = server.resolvedUrls!.local[0];
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  it('draws the flash-next plan and a small SP on vs off run with its differences', async () => {
    const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(url);

    // plan view: flash-next, T = 16381, tp 8, auto: sharded, 3 padding rows on rank 7
    await page.selectOption('select[name=sp]', 'auto');
    await page.selectOption('select[name=config]', 'flash-next');
    await page.fill('input[name=tokens]', '16381');
    await page.selectOption('select[name=tp]', '8');
    // the plan builds flash-next's graph for its bytes: seconds on a loaded machine
    await expect.poll(() => page.locator('#plan .lane-note.pad').textContent(), { timeout: 20_000 }).toBe('2045 rows + 3 pad');
    expect(await page.locator('#run').isDisabled()).toBe(true);
    expect(await page.locator('#plan .facts').textContent()).toContain('layer 2 (after the last PLE layer)');

    // a bad variable value is reported, naming it
    await page.fill('input[name=minTokens]', '12abc');
    await expect
      .poll(() => page.locator('#error').textContent(), { timeout: 20_000 })
      .toContain('ATOM_QWEN4_EXP_SP_MIN_TOKENS must be a non-negative decimal integer');
    await page.fill('input[name=minTokens]', '');

    // run view: small, T = 37, tp 4, ring: SP on differs from SP off somewhere, padding stays zero
    await page.selectOption('select[name=sp]', 'on');
    await page.selectOption('select[name=config]', 'small');
    await page.fill('input[name=tokens]', '37');
    await page.selectOption('select[name=tp]', '4');
    await page.click('#run');
    await page.locator('#run-view .headline').waitFor({ timeout: 20_000 });
    const headline = await page.locator('#run-view .headline').textContent();
    expect(headline).toMatch(/Run a \(SP on, ring\) against run b \(SP off, ring\): \d+ of 18 compared points differ/);
    expect(await page.locator('#run-view .heatmap .diff-cell').count()).toBeGreaterThan(0);
    expect(await page.locator('#run-view td.bad').count()).toBe(0);
    // 18 compared steps, and the MTP head's row (traffic only)
    expect(await page.locator('#run-view table.steps tbody tr').count()).toBe(19);
    if (process.env.DEVPAGE_SCREENSHOT) await page.screenshot({ path: process.env.DEVPAGE_SCREENSHOT, fullPage: true });
    expect(errors).toEqual([]);
  }, 60_000);

  it("first load: the CLI's defaults sharded over four ranks; one control change redraws the plan and drives the run", async () => {
    const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(url);
    // small, T 300, tp 4, SP on, seed 0: four coloured bands of 75 rows, the MTP head's collectives in the total
    expect(await page.locator('input[name=seed]').inputValue()).toBe('0');
    await expect
      .poll(() => page.locator('#plan svg.bands text.lane-note').allTextContents(), { timeout: 20_000 })
      .toEqual(['75 rows', '75 rows', '75 rows', '75 rows']);
    // each rank's real rows in its own colour (unsharded, all four would be the same grey)
    const fills = await page
      .locator('#plan svg.bands rect')
      .evaluateAll((rs) => rs.filter((r) => /^rank \d+: rows /.test(r.querySelector('title')?.textContent ?? '')).map((r) => r.getAttribute('fill')));
    expect(fills).toHaveLength(4);
    expect(new Set(fills).size).toBe(4);
    expect(await page.locator('#plan .plan-total').textContent()).toBe('2.21 MiB');
    expect(await page.locator('#plan table.grid').textContent()).toContain('mtp.attn.all_reduce');
    expect(await page.locator('#plan .plan-sp-off').textContent()).toMatch(/ MiB$/);

    // one change (T 301): the plan shows the padding, and the run runs that forward, sharded
    await page.fill('input[name=tokens]', '301');
    await expect
      .poll(() => page.locator('#plan svg.bands text.lane-note').allTextContents(), { timeout: 20_000 })
      .toEqual(['76 rows', '76 rows', '76 rows', '73 rows + 3 pad']);
    await page.click('#run');
    await expect.poll(() => page.locator('#progress').textContent(), { timeout: 30_000, interval: 200 }).toMatch(/^(Done|Run failed)/);
    expect(await page.locator('#run-view .headline').textContent()).toMatch(
      /^small, T = 301, tp 4, seed 0, .*Run a \(SP on, ring\) against run b \(SP off, ring\)/,
    );
    // the SP selector drives run a: off, both runs unsharded and equal
    await page.selectOption('select[name=sp]', 'off');
    await expect.poll(() => page.locator('#plan svg.bands text.lane-note').first().textContent(), { timeout: 20_000 }).toBe('all 301 rows (replicated)');
    await page.click('#run');
    await expect
      .poll(() => page.locator('#run-view .headline').textContent(), { timeout: 30_000, interval: 200 })
      .toMatch(/Run a \(SP off, ring\) against run b \(SP off, ring\): All \d+ compared points are bit-identical\./);
    expect(errors).toEqual([]);
  }, 90_000);

  it('runs the full model: PLE, attention, GDN and MoE steps, padding, ring differs at tp 4, one-shot and tp 2 do not', async () => {
    const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    page.on('console', (m) => {
      if (m.type() === 'error') errors.push(m.text());
    });
    await page.goto(url);
    const run = async (config: string, tokens: number, tp: number, reduce: string): Promise<string> => {
      await page.selectOption('select[name=config]', config);
      await page.fill('input[name=tokens]', String(tokens));
      await page.selectOption('select[name=tp]', String(tp));
      await page.selectOption('select[name=reduce]', reduce);
      await page.selectOption('select[name=subLayers]', 'model');
      await page.click('#run');
      await expect.poll(() => page.locator('#progress').textContent(), { timeout: 30_000, interval: 200 }).toMatch(/^(Done|Run failed)/);
      return (await page.locator('#run-view .headline').textContent())!;
    };

    // small, T 203 at tp 4: C 51, rank 3 holds 1 padding row
    const ring = await run('small', 203, 4, 'ring');
    expect(ring).toMatch(
      /sub-layers: .*PLE.*Run a \(SP on, ring\) against run b \(SP off, ring\): \d+ of 19 compared points differ \(first at L\d\.\w+ \((GDN|attention|MoE)\)\)/,
    );
    const stepCells = await page.locator('#run-view table.steps td.step').allTextContents();
    expect(stepCells.slice(0, 6)).toEqual(['L0.attn (GDN)', 'L0.mlp (MoE)', 'L1.ple (PLE)', 'L1.attn (GDN)', 'L1.mlp (MoE)', 'L2.attn (GDN)']);
    expect(stepCells).toContain('L3.attn (attention)');
    expect(stepCells.slice(-2)).toEqual(['exit', 'mtp']);
    const lineLabels = await page.locator('#run-view .heatmap text.lane-label').allTextContents();
    expect(lineLabels).toContain('L1.ple (PLE)');
    expect(lineLabels).toContain('L7.attn (attention)');
    // padding: the hatched column on the 12 sharded lines and the ownership strip; the table says it stayed zero
    expect(await page.locator('#run-view .heatmap rect[fill="url(#padding-hatch)"]').count()).toBe(13);
    expect(await page.locator('#run-view table.steps td.ok', { hasText: 'zero' }).count()).toBe(12);
    expect(await page.locator('#run-view td.bad').count()).toBe(0);
    expect(await page.locator('#run-view .heatmap .diff-cell').count()).toBeGreaterThan(0);
    if (process.env.DEVPAGE_SCREENSHOT) await page.screenshot({ path: process.env.DEVPAGE_SCREENSHOT.replace(/\.png$/, '-model.png'), fullPage: true });

    expect(await run('tiny', 203, 4, 'oneshot')).toContain('Run a (SP on, oneshot) against run b (SP off, oneshot): All 11 compared points are bit-identical.');
    expect(await run('tiny', 203, 2, 'ring')).toContain('All 11 compared points are bit-identical.');
    expect(await page.locator('#run-view .heatmap .diff-cell').count()).toBe(0);

    // a long run can be cancelled, and the page runs again afterwards
    await page.selectOption('select[name=config]', 'small');
    await page.fill('input[name=tokens]', '2048');
    await page.click('#run');
    await page.locator('#cancel').click();
    await expect.poll(() => page.locator('#progress').textContent()).toBe('Cancelled.');
    expect(await page.locator('#run').isDisabled()).toBe(false);
    expect(await run('tiny', 37, 4, 'ring')).toMatch(/of 11 compared points differ/);
    expect(errors).toEqual([]);
  }, 90_000);
});
