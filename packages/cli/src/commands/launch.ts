// `hcsp launch`: one process per rank on this node, with torchrun's environment contract
// (@hcsp/ranks' launcher.ts); the ranks meet at rank 0's rendezvous store on MASTER_ADDR:MASTER_PORT.
import type { Command } from 'commander';
import {
  COMMUNICATORS,
  communicatorKind,
  DEFAULT_RENDEZVOUS_TIMEOUT_S,
  jobSecret,
  launchRanks,
  parseSeconds,
  RANK_COMM_MODES,
  type LaunchOptions,
} from '@hcsp/ranks';
import { parseIntStrict } from '../parseArgs.ts';

interface LaunchCliOptions {
  nprocPerNode: string;
  nnodes: string;
  nodeRank: string;
  masterAddr: string;
  masterPort: string;
  rendezvousTimeout: string;
}

/** torchrun's default port */
const DEFAULT_MASTER_PORT = '29500';

/** "--comm mpi|nccl": the communicators a rank can use */
const RANK_COMM = `--comm ${RANK_COMM_MODES.join('|')}`;

/** What the ranks run: `prefill` with a multi-process communicator (the commands that are ranks). */
function checkRankCommand(command: string[]): void {
  if (command[0] !== 'prefill') {
    throw new Error(
      `hcsp launch runs \`prefill ... ${RANK_COMM}\` as ranks, got ${JSON.stringify(command.join(' '))}: write \`hcsp launch [options] -- prefill ...\``,
    );
  }
  const at = command.indexOf('--comm');
  const comm = at >= 0 ? command[at + 1] : command.find((a) => a.startsWith('--comm='))?.slice('--comm='.length);
  if (comm === undefined || communicatorKind(comm) === undefined) {
    const each = COMMUNICATORS.map((c) => `--comm ${c.mode} (${c.ranks})`).join(' or ');
    throw new Error(
      `hcsp launch: the ranks' prefill needs ${each}, got ${comm === undefined ? 'no --comm (sim, every rank in one process)' : `--comm ${comm}`}`,
    );
  }
}

/** The launcher's options; the job's rendezvous secret from `env` (HCSP_RENDEZVOUS_SECRET, needed for --nnodes > 1), else a new one. */
export function parseLaunchOptions(opts: LaunchCliOptions, command: string[], env: NodeJS.ProcessEnv = process.env): LaunchOptions {
  const nnodes = parseIntStrict(opts.nnodes, '--nnodes', { min: 1 });
  const nprocPerNode = parseIntStrict(opts.nprocPerNode, '--nproc-per-node', { min: 1, max: 1024 });
  const nodeRank = parseIntStrict(opts.nodeRank, '--node-rank', { min: 0, max: nnodes - 1 });
  const masterPort = parseIntStrict(opts.masterPort, '--master-port', { min: 1, max: 65535 });
  const rendezvousTimeoutMs = parseSeconds(opts.rendezvousTimeout, '--rendezvous-timeout');
  if (opts.masterAddr === '') throw new Error('--master-addr must not be empty');
  checkRankCommand(command);
  return { nprocPerNode, nnodes, nodeRank, masterAddr: opts.masterAddr, masterPort, rendezvousTimeoutMs, secret: jobSecret(env, nnodes), command };
}

export function registerLaunch(program: Command): void {
  program
    .command('launch')
    .description(
      "start this node's ranks, one process each, with torchrun's environment (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT): hcsp launch --nproc-per-node 4 -- prefill --comm mpi ...",
    )
    .argument('<command...>', `after --: the hcsp command each rank runs (prefill ... ${RANK_COMM})`)
    .requiredOption('--nproc-per-node <n>', 'ranks on this node (one per GPU)')
    .option('--nnodes <m>', "nodes in the job (more than one: every node's launcher needs the same HCSP_RENDEZVOUS_SECRET in its environment)", '1')
    .option('--node-rank <k>', "this node's index (ranks k*n .. k*n+n-1); node 0 runs rank 0, which serves the rendezvous", '0')
    .option('--master-addr <host>', "node 0's address, where rank 0 serves the rendezvous store", '127.0.0.1')
    .option('--master-port <port>', "the rendezvous store's TCP port", DEFAULT_MASTER_PORT)
    .option(
      '--rendezvous-timeout <s>',
      'seconds for every rank to join (then the ranks end, naming who is missing); a positive number, at most 2147483.647',
      String(DEFAULT_RENDEZVOUS_TIMEOUT_S),
    )
    .action(async (command: string[], opts: LaunchCliOptions) => {
      const o = parseLaunchOptions(opts, command);
      const status = await launchRanks(o, (line) => process.stderr.write(`${line}\n`));
      if (status !== 0) process.exit(status);
    });
}
