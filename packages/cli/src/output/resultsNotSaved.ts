// Results computed but their files not written at the end (the disk filled, the folder went
// away meanwhile): the command still prints the results (`stdout`), then fails with this
// error, so that nothing computed is lost without a word.
export class ResultsNotSavedError extends Error {
  constructor(
    message: string,
    readonly stdout: string,
  ) {
    super(`${message} (the results were printed, not saved)`);
    this.name = 'ResultsNotSavedError';
  }
}

/** Runs a command's action: on ResultsNotSavedError its results go to stdout before the error. */
export async function printResultsOnSaveFailure<T>(action: () => Promise<T>): Promise<T> {
  try {
    return await action();
  } catch (e) {
    if (e instanceof ResultsNotSavedError) process.stdout.write(e.stdout);
    throw e;
  }
}
