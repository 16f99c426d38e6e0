/**
 * A backend that cannot start on this machine (no device, no runtime, no binary): typed so
 * that callers (the CLI, test suites, `--device auto`) can tell "not here" from a failure
 * of a started backend. The message names what was tried.
 */
export class BackendUnavailableError extends Error {
  constructor(
    readonly backend: string,
    message: string,
  ) {
    super(message);
    this.name = 'BackendUnavailableError';
  }
}
