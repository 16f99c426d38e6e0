// One device's engine cases under HCSP_POISON_UNINITIALIZED=1 (set by engine.test.ts before
// the addon loads): prints '<case>: equal' or '<case>: differs at <value>' per case, comparing
// every graph output with the CPU reference's bits. argv: host | emulated.
import { createRocmBackend } from '../../packages/backend-rocm/src/rocmBackend.ts';
import { bytesOf, ENGINE_CASES, prefillOf, referenceOutputs, repeatedRuns } from './engineRuns.ts';

const device = process.argv[2] as 'host' | 'emulated';
if (process.env.HCSP_POISON_UNINITIALIZED !== '1') throw new Error('poisonedRunChild: run with HCSP_POISON_UNINITIALIZED=1');
const backend = await createRocmBackend({ device, kernels: 'exact' });
for (const c of ENGINE_CASES) {
  const p = prefillOf(c.options);
  const reference = await referenceOutputs(p);
  // the second run reuses the first's blocks: poison filled afresh, then written by the kernels
  const [, second] = await repeatedRuns(backend, p, 2);
  const bad = [...reference].find(([id, t]) => !bytesOf(second.values.get(id)!).equals(bytesOf(t)));
  process.stdout.write(`${c.name}: ${bad ? `differs at ${bad[0]}` : 'equal'}\n`);
}
await backend.dispose();
