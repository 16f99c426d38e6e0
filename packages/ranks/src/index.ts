// @hcsp/ranks: one process per rank. What the hcsp command's `launch` and `prefill --comm
// mpi|nccl` use: the launcher, a rank's side of the job (PrefillRank: its rendezvous, control
// plane, watchdog and communicator), the communicators and which backends take them.
export { COMM_MODES, COMMUNICATORS, communicatorKind, RANK_COMM_MODES, type CommMode, type CommunicatorKind, type RankCommMode } from './communicators.ts';
export { launchRanks, type LaunchOptions } from './launcher.ts';
export { planDigest, PrefillRank, QuietRankExit, RankStartupFailure, runPrefillRanked, type RankRunExtras } from './prefillRank.ts';
export { checkRankBackend, rankBackendFlags, rankBackends } from './rankBackends.ts';
export { gatherNumbers, type RankControl } from './rankControl.ts';
export { DEFAULT_RENDEZVOUS_TIMEOUT_S } from './rankEnv.ts';
export { COLLECTIVE_TIMEOUT_ENV, collectiveTimeoutMs, DEFAULT_COLLECTIVE_TIMEOUT_S } from './rankWatchdog.ts';
export { jobSecret, newSecret } from './rendezvousSecret.ts';
export { parseSeconds } from './seconds.ts';
