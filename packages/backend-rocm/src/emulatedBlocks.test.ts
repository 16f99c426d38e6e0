import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// The emulated device's block launches (native/src/gpu/emulated_blocks.h), on kernels a real
// kernel must not be (threads missing a barrier, a read with no barrier before it): a probe
// (test/support/emulatedBlocksProbe.cc) compiles block kernels with vendor.h's macros for the
// host, as the addon compiles the .cu files, and runs them as block launches. Sums in shared
// memory are tested through the addon in gpuCooperativeKernels.test.ts.

const root = join(dirname(fileURLToPath(import.meta.url)), '../../..');
let dir = '';
/** the probe's lines by case, per fiber switch: the x86-64 one the addon uses there, and glibc's swapcontext (other architectures') */
const runs = new Map<string, Map<string, string>>();
const SWITCHES: Record<string, string[]> = process.arch === 'x64' ? { 'x86-64': [], ucontext: ['-DHCSP_FIBER_UCONTEXT'] } : { ucontext: [] };

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'hcsp-blocks-'));
  const cxx = process.env.CXX || 'c++';
  const sources = [
    'test/support/emulatedBlocksProbe.cc',
    'native/src/gpu/emulated_blocks.cc',
    'native/src/gpu/emulated_fiber.cc',
    'native/src/host/thread_pool.cc',
  ].map((f) => join(root, f));
  for (const [name, defines] of Object.entries(SWITCHES)) {
    const probe = join(dir, `probe-${name}`);
    const built = spawnSync(cxx, ['-std=c++17', '-O2', ...defines, '-I', join(root, 'native/src'), ...sources, '-o', probe, '-lpthread'], {
      encoding: 'utf8',
      timeout: 180_000,
    });
    if (built.status !== 0) throw new Error(`compiling the probe with ${cxx} failed: ${built.error?.message ?? built.stderr}`);
    const r = spawnSync(probe, [], { encoding: 'utf8', timeout: 60_000 });
    if (r.status !== 0) throw new Error(`the probe (${name}) failed: ${r.error?.message ?? r.stderr}`);
    runs.set(
      name,
      new Map(
        r.stdout
          .trim()
          .split('\n')
          .map((l) => [l.slice(0, l.indexOf(': ')), l.slice(l.indexOf(': ') + 2)]),
      ),
    );
  }
}, 400_000);

afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe.each(Object.keys(SWITCHES))('emulated block launches (fibers switched by %s)', (name) => {
  const lines = () => runs.get(name)!;

  it('every thread of every block runs, with its block, thread and grid ids', () => {
    expect(lines().get('ids')).toBe('right');
  });

  it("a value written before a barrier is read after it; read with no barrier between, a neighbour's is stale", () => {
    for (const threads of [64, 128, 256]) {
      expect(lines().get(`synced ${threads}`)).toBe('right');
      // in thread order every lower neighbour would have written already: the reversed rounds show the missing barrier
      expect(lines().get(`unsynced ${threads}`)).toMatch(/^block \d+ thread \d+ read -?\d+$/);
    }
  });

  it('fails a block whose threads do not all reach the same barrier, naming the kernel, the block and the lines', () => {
    expect(lines().get('returns')).toMatch(
      /^error: emulated device: kernel probe_returns, block \d: 59 of its 64 threads returned while thread 0 waits at the barrier on line \d+ \(every thread of a block must reach the same barriers\)$/,
    );
    const two = lines()
      .get('two barriers')!
      .match(/^error: emulated device: kernel probe_two_barriers, block 0: thread 0 waits at the barrier on line (\d+), thread 5 at the one on line (\d+) /);
    expect(two).not.toBeNull();
    expect(two![1]).not.toBe(two![2]);
    expect(lines().get('outside')).toMatch(
      /^error: emulated device: HCSP_BARRIER \(line \d+\) outside a block launch: a grid-stride kernel has no block to wait for$/,
    );
    // and the next launch runs as before
    expect(lines().get('after')).toBe('right');
  });
});
