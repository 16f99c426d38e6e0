// Rank 0 of rankWatchdog.test.ts's two-rank job (node --import tsx; argv: the store's port):
// it serves the rendezvous store in its own process, as under hcsp launch, joins as rank 0 and
// waits in a call that never completes; its watchdog (1 s) then ends the job through the store
// and this process at once (std::_Exit, as a rank with a communicator does), so the other rank
// must have been told before the store went with this process.
import { loadNativeAddon } from '../../packages/backend-rocm/src/nativeAddon.ts';
import { RankWatchdog } from '../../packages/ranks/src/rankWatchdog.ts';
import { RendezvousClient, RendezvousServer } from '../../packages/ranks/src/rendezvousStore.ts';

const port = Number(process.argv[2]);
const options = { host: '127.0.0.1', port, worldSize: 2, secret: 'a test job', timeoutMs: 30_000 };
await RendezvousServer.listen(options);
const client = await RendezvousClient.join({ ...options, rank: 0 }, () => {});
const addon = loadNativeAddon();
const rank0 = new RankWatchdog(0, 2, 1000, (code) => addon.exitNow(code));
rank0.useStore(client);
await rank0.watchdog.watch('node 9 (allGather layers.0.attn)', () => new Promise(() => {}));
