import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// Open MPI's ompi-server, which Open MPI needs for MPI_Comm_connect/accept between processes
// that mpirun did not start together (singletons): the MPI world that `hcsp launch` ranks
// join (MpiCommunicator.join). Rank 0 starts one for the job; every rank points Open MPI at
// its URI (pmix_server_uri) before MPI starts. It ends with rank 0's process.

const URI_TIMEOUT_MS = 30_000;

export class OmpiServerError extends Error {
  override name = 'OmpiServerError';
}

/** A running ompi-server and its URI. */
export class OmpiServer {
  private constructor(
    private readonly child: ChildProcess,
    readonly uri: string,
  ) {}

  /** starts ompi-server (from Open MPI, on PATH) and reads the URI it reports */
  static start(): Promise<OmpiServer> {
    // the URI goes to a file: on a pipe ompi-server's stdout is buffered until it exits
    const dir = mkdtempSync(join(tmpdir(), 'hcsp-ompi-server-'));
    const file = join(dir, 'uri');
    return new Promise((resolve, reject) => {
      const child = spawn('ompi-server', ['--no-daemonize', '--report-uri', file], { stdio: ['ignore', 'ignore', 'pipe'] });
      // it must not outlive this process, however it ends, from its start on (this process may end before its URI comes)
      const stop = (): void => void (child.exitCode === null && child.signalCode === null && child.kill('SIGKILL'));
      process.once('exit', stop);
      let err = '';
      const done = (): void => {
        clearTimeout(timer);
        clearInterval(poll);
        rmSync(dir, { recursive: true, force: true });
      };
      const fail = (why: string): void => {
        done();
        process.off('exit', stop);
        child.kill('SIGKILL');
        reject(new OmpiServerError(`rank 0 could not start Open MPI's ompi-server, which joining separately started MPI ranks needs: ${why}`));
      };
      const timer = setTimeout(() => fail(`it reported no URI within ${URI_TIMEOUT_MS / 1000} s`), URI_TIMEOUT_MS);
      const poll = setInterval(() => {
        const line = existsSync(file)
          ? readFileSync(file, 'utf8')
              .split('\n')
              .find((l) => /^\d+\.\d+;/.test(l.trim()))
          : undefined;
        if (line === undefined) return;
        done();
        child.removeAllListeners('exit');
        const server = new OmpiServer(child, line.trim());
        child.unref();
        (child.stderr as unknown as { unref?: () => void }).unref?.();
        resolve(server);
      }, 20);
      child.once('error', (e: NodeJS.ErrnoException) =>
        fail(e.code === 'ENOENT' ? 'ompi-server is not on PATH (Debian: openmpi-bin, `npm run setup:system`)' : e.message),
      );
      child.once('exit', (code, signal) =>
        fail(`it exited (${signal ?? `code ${code}`}) before reporting its URI: ${err.trim().split('\n').slice(-3).join(' ')}`),
      );
      child.stderr!.setEncoding('utf8').on('data', (c: string) => (err += c));
    });
  }

  stop(): void {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGKILL');
  }
}
