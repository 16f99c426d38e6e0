// `hcsp launch`: starts this node's rank processes, as torchrun does: one per local rank, each
// an `hcsp` process with torchrun's environment (RANK, WORLD_SIZE, LOCAL_RANK,
// LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR, MASTER_PORT), and supervises them. The ranks
// meet by themselves at rank 0's rendezvous store (rendezvousStore.ts); the launcher only
// watches its children: when one fails or is killed it says which, gives the others a moment
// to end by themselves (the store tells them), then stops them, so that no rank is left
// behind; a rank that is stopped (SIGSTOP, a debugger: its peers' collective watchdog ends
// the job) cannot end by itself, so it is named and killed at once. Each rank runs in its own
// process group, so that what it started (Open MPI's helpers) ends with it; a rank whose
// launcher dies ends too (its IPC channel closes).
//
// What a job leaves and who can reach it (issue 21): the ranks, and what they start (Open
// MPI's ompi-server and orted, PMIx, hwloc), get a temporary folder of the job's own, made
// (mode 0700) in the launcher's TMPDIR and removed with everything in it when the ranks have
// ended, however they ended (success, failure, a killed rank, a signal to the launcher); only
// a launcher killed outright (SIGKILL) leaves it. The ranks get the job's rendezvous secret
// in their environment (rendezvousSecret.ts), and Open MPI's TCP traffic (its out-of-band
// channel and the TCP BTL) is restricted to MASTER_ADDR's interface (masterInterface.ts)
// unless the user chose interfaces; Open MPI 4.1 still listens on the wildcard address (its
// if_include parameters select the interfaces it uses and advertises, not where it binds).
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { constants, tmpdir } from 'node:os';
import { join } from 'node:path';
import { masterInterface } from './masterInterface.ts';
import { SECRET_ENV } from './rendezvousSecret.ts';

export interface LaunchOptions {
  nprocPerNode: number;
  nnodes: number;
  nodeRank: number;
  masterAddr: string;
  masterPort: number;
  rendezvousTimeoutMs: number;
  /** the job's rendezvous secret, given to the ranks in their environment (never printed) */
  secret: string;
  /** the hcsp command each rank runs (e.g. ['prefill', '--comm', 'mpi', ...]) */
  command: string[];
}

/** Where this node's ranks run: the job's own temporary folder, and MASTER_ADDR's interface (null: none found, nothing restricted). */
export interface JobPlace {
  tmpdir: string;
  masterInterface: string | null;
}

/** after the first failure, how long the other ranks get to end by themselves before SIGTERM, then SIGKILL */
const GRACE_MS = 3000;
const KILL_AFTER_MS = 3000;

interface RankProcess {
  rank: number;
  localRank: number;
  child: ChildProcess;
  exited: boolean;
}

function describeExit(code: number | null, signal: NodeJS.Signals | null): string {
  return signal ? `was killed by ${signal}` : `exited with code ${code}`;
}

/** the process is stopped (state T or t in /proc/<pid>/stat: SIGSTOP, a debugger); false where that cannot be read */
function isStopped(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // the state follows the command name, which is in parentheses and may hold any character
    return /^\) [Tt] /.test(stat.slice(stat.lastIndexOf(')')));
  } catch {
    return false;
  }
}

function exitStatus(code: number | null, signal: NodeJS.Signals | null): number {
  return signal ? 128 + (constants.signals[signal] ?? 0) : (code ?? 1);
}

/** Open MPI's TCP components, whose interfaces the launcher restricts to MASTER_ADDR's (each unless the user chose its interfaces) */
const OMPI_TCP_COMPONENTS = ['oob_tcp', 'btl_tcp'];

/**
 * The environment of one rank: torchrun's variables, the job's secret and temporary folder
 * (for Node, Open MPI and PMIx alike), Open MPI's TCP interfaces; mpirun's own rank variables
 * removed, so the rank does not take itself for one of mpirun's.
 */
export function rankEnvironment(base: NodeJS.ProcessEnv, o: LaunchOptions, localRank: number, place: JobPlace): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(base)) if (!k.startsWith('OMPI_COMM_WORLD_') && !k.startsWith('PMIX_')) env[k] = v;
  if (place.masterInterface !== null) {
    for (const c of OMPI_TCP_COMPONENTS) {
      // Open MPI refuses an include list beside an exclude list
      if (base[`OMPI_MCA_${c}_if_include`] === undefined && base[`OMPI_MCA_${c}_if_exclude`] === undefined)
        env[`OMPI_MCA_${c}_if_include`] = place.masterInterface;
    }
  }
  return {
    ...env,
    TMPDIR: place.tmpdir,
    TMP: place.tmpdir,
    TEMP: place.tmpdir,
    OMPI_MCA_orte_tmpdir_base: place.tmpdir,
    [SECRET_ENV]: o.secret,
    RANK: String(o.nodeRank * o.nprocPerNode + localRank),
    WORLD_SIZE: String(o.nnodes * o.nprocPerNode),
    LOCAL_RANK: String(localRank),
    LOCAL_WORLD_SIZE: String(o.nprocPerNode),
    GROUP_RANK: String(o.nodeRank),
    MASTER_ADDR: o.masterAddr,
    MASTER_PORT: String(o.masterPort),
    HCSP_RENDEZVOUS_TIMEOUT: String(o.rendezvousTimeoutMs / 1000),
  };
}

/** the job's temporary folder, in the launcher's TMPDIR; an error names the folder it could not make */
function makeJobTmpdir(): string {
  const base = tmpdir();
  try {
    return mkdtempSync(join(base, 'hcsp-launch-'));
  } catch (e) {
    throw new Error(`hcsp launch: cannot make the job's temporary folder in ${base} (TMPDIR): ${(e as Error).message}`);
  }
}

/**
 * Runs this node's ranks to the end; resolves to the launcher's exit status: 0 when every
 * rank succeeded, else the first failed rank's (128 + n when signal n killed it).
 * `report` gets the launcher's own messages (which rank failed, which it stopped).
 */
export async function launchRanks(o: LaunchOptions, report: (line: string) => void): Promise<number> {
  const place: JobPlace = { masterInterface: await masterInterface(o.masterAddr), tmpdir: makeJobTmpdir() };
  const ranks: RankProcess[] = [];
  let firstFailure: number | null = null;
  let graceTimer: NodeJS.Timeout | null = null;
  let killTimer: NodeJS.Timeout | null = null;

  const stopOthers = (signal: NodeJS.Signals): void => {
    for (const r of ranks) {
      if (r.exited) continue;
      try {
        process.kill(-r.child.pid!, signal);
      } catch {
        // already gone
      }
    }
  };
  const onInterrupt = (signal: NodeJS.Signals): void => {
    report(`hcsp launch: interrupted by ${signal}: stopping the ranks`);
    firstFailure ??= 128 + (constants.signals[signal] ?? 0);
    stopOthers('SIGTERM');
    killTimer ??= setTimeout(() => stopOthers('SIGKILL'), KILL_AFTER_MS);
  };

  return new Promise((resolve) => {
    for (const s of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(s, onInterrupt);
    const finish = (): void => {
      if (!ranks.every((r) => r.exited)) return;
      for (const s of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.off(s, onInterrupt);
      if (graceTimer) clearTimeout(graceTimer);
      if (killTimer) clearTimeout(killTimer);
      // whatever a rank left in its process group (Open MPI's helpers) ends with the job
      for (const r of ranks) {
        try {
          process.kill(-r.child.pid!, 'SIGKILL');
        } catch {
          // the group is empty
        }
      }
      // and whatever they left in the job's folder (ompi-server's session folder, killed ranks' job families)
      try {
        rmSync(place.tmpdir, { recursive: true, force: true, maxRetries: 5 });
      } catch (e) {
        report(`hcsp launch: could not remove the job's temporary folder ${place.tmpdir}: ${(e as Error).message}`);
      }
      resolve(firstFailure ?? 0);
    };
    for (let localRank = 0; localRank < o.nprocPerNode; localRank++) {
      const rank = o.nodeRank * o.nprocPerNode + localRank;
      const child = spawn(process.execPath, [...process.execArgv, process.argv[1], ...o.command], {
        env: rankEnvironment(process.env, o, localRank, place),
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
        detached: true,
      });
      const r: RankProcess = { rank, localRank, child, exited: false };
      ranks.push(r);
      child.on('error', (e) => {
        report(`hcsp launch: rank ${rank} could not start: ${e.message}`);
      });
      child.on('exit', (code, signal) => {
        r.exited = true;
        if ((code !== 0 || signal) && firstFailure === null) {
          firstFailure = exitStatus(code, signal);
          const others = ranks.filter((x) => !x.exited).map((x) => x.rank);
          report(
            `hcsp launch: rank ${rank} (local rank ${localRank}, pid ${child.pid}) ${describeExit(code, signal)}` +
              (others.length > 0
                ? `; stopping rank${others.length > 1 ? 's' : ''} ${others.join(', ')} of this node if ${others.length > 1 ? 'they do' : 'it does'} not end within ${GRACE_MS / 1000} s`
                : ''),
          );
          for (const x of ranks.filter((y) => !y.exited && isStopped(y.child.pid!))) {
            report(
              `hcsp launch: rank ${x.rank} (local rank ${x.localRank}, pid ${x.child.pid}) is stopped (SIGSTOP or a debugger): it cannot end by itself, killing it now`,
            );
            try {
              process.kill(-x.child.pid!, 'SIGKILL');
            } catch {
              // it ended meanwhile
            }
          }
          graceTimer = setTimeout(() => {
            stopOthers('SIGTERM');
            killTimer = setTimeout(() => stopOthers('SIGKILL'), KILL_AFTER_MS);
          }, GRACE_MS);
        }
        finish();
      });
    }
  });
}

/** A watcher of the launcher that runs off the JavaScript thread (the MPI addon's: MpiAddon.endWithParent). */
export interface NativeParentWatch {
  endWithParent(parentPid: number, line: string): void;
  parentEnded(): never;
}

/**
 * In a rank process started by `hcsp launch`: end when the launcher does (its IPC channel
 * closes), so that a launcher killed outright leaves no rank behind. The channel does not
 * keep the process alive. `exit` ends the process (once a communicator runs, at once: a
 * worker blocked in a collective on a peer that is gone would hold a normal exit forever).
 * With `native` (--comm mpi), the native watcher ends it instead, also while this thread is
 * blocked in MPI (the join), and kills what the rank started (ompi-server) with it.
 *
 * Returns how the rank's other causes of ending are reported (`report`): after a grace in
 * which the launcher's end, if it is the cause, is seen first. A launcher killed outright closes
 * its end of every rank's channel before the kernel reparents its ranks, and a peer that saw
 * that first can make the store abort the job before this process reads its own channel's
 * close (which is already pending then): without the grace the rank would blame the peer.
 */
export function endWithLauncher(rank: number, exit: (code: number) => never, native?: NativeParentWatch): (report: () => void) => void {
  if (!process.send || !process.channel) return (report) => report();
  const launcher = process.ppid;
  const line = `hcsp: rank ${rank}: its launcher (hcsp launch, pid ${launcher}) ended; ending too`;
  process.channel.unref();
  native?.endWithParent(launcher, line);
  const end = (): never => {
    if (native) native.parentEnded();
    process.stderr.write(`${line}\n`);
    return exit(1);
  };
  process.once('disconnect', end);
  return (report) => {
    if (!process.connected || process.ppid !== launcher) end();
    setTimeout(report, LAUNCHER_END_GRACE_MS);
  };
}

/** how long a rank's other cause of ending waits for the launcher's end to be seen (its channel's close is already pending then) */
const LAUNCHER_END_GRACE_MS = 250;
