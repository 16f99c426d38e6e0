// Who this process is in a job of separately started ranks: torchrun's environment contract,
// which `hcsp launch` sets for every rank process (RANK, WORLD_SIZE, LOCAL_RANK,
// LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR, MASTER_PORT), or Open MPI's own variables
// when mpirun started it (OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK, _LOCAL_SIZE).
// hcsp's own: HCSP_RENDEZVOUS_SECRET (what the ranks prove to the rendezvous store that they
// know: rendezvousSecret.ts) and HCSP_RENDEZVOUS_TIMEOUT.
import { parseSeconds } from './seconds.ts';
import { SECRET_ENV, checkSecret } from './rendezvousSecret.ts';

export interface LaunchedRank {
  rank: number;
  worldSize: number;
  localRank: number;
  localWorldSize: number;
  /** where rank 0 serves the rendezvous store */
  masterAddr: string;
  masterPort: number;
  /** how long the rendezvous may take (HCSP_RENDEZVOUS_TIMEOUT, seconds) */
  rendezvousTimeoutMs: number;
  /** the job's rendezvous secret (HCSP_RENDEZVOUS_SECRET) */
  secret: string;
}

export const DEFAULT_RENDEZVOUS_TIMEOUT_S = 300;

type Env = Record<string, string | undefined>;

function int(env: Env, name: string, min: number): number {
  const v = env[name];
  if (v === undefined || !/^\d+$/.test(v) || Number(v) < min)
    throw new Error(`${name}=${JSON.stringify(v ?? '')} is not an integer >= ${min} (hcsp launch sets it for every rank)`);
  return Number(v);
}

/** The torchrun-style rank of this process, or null when RANK is unset (not started by hcsp launch or a launcher like it); a partial or inconsistent set is an error naming the variable. */
export function launchedRank(env: Env = process.env): LaunchedRank | null {
  if (env.RANK === undefined) return null;
  const rank = int(env, 'RANK', 0);
  const worldSize = int(env, 'WORLD_SIZE', 1);
  const localRank = env.LOCAL_RANK === undefined ? rank : int(env, 'LOCAL_RANK', 0);
  const localWorldSize = env.LOCAL_WORLD_SIZE === undefined ? worldSize : int(env, 'LOCAL_WORLD_SIZE', 1);
  if (rank >= worldSize) throw new Error(`RANK=${rank} is not below WORLD_SIZE=${worldSize}`);
  if (localRank >= localWorldSize) throw new Error(`LOCAL_RANK=${localRank} is not below LOCAL_WORLD_SIZE=${localWorldSize}`);
  const masterAddr = env.MASTER_ADDR;
  if (!masterAddr) throw new Error("MASTER_ADDR is unset: the ranks meet at rank 0's rendezvous store on MASTER_ADDR:MASTER_PORT");
  const masterPort = int(env, 'MASTER_PORT', 1);
  if (masterPort > 65535) throw new Error(`MASTER_PORT=${masterPort} is not a TCP port (1..65535)`);
  const timeout = env.HCSP_RENDEZVOUS_TIMEOUT;
  const rendezvousTimeoutMs = timeout === undefined ? DEFAULT_RENDEZVOUS_TIMEOUT_S * 1000 : parseSeconds(timeout, 'HCSP_RENDEZVOUS_TIMEOUT');
  const secret = env[SECRET_ENV];
  if (secret === undefined) {
    throw new Error(
      `${SECRET_ENV} is unset: a rank proves with it that it belongs to the job before rank 0's rendezvous store lets it in (hcsp launch sets it for every rank; ranks started otherwise need the same value in every rank's environment)`,
    );
  }
  return { rank, worldSize, localRank, localWorldSize, masterAddr, masterPort, rendezvousTimeoutMs, secret: checkSecret(secret) };
}
