// The `hcsp` command line. Every failure ends as one line `hcsp: <message>` on stderr with a
// non-zero exit: 2 for usage errors commander finds (unknown option, missing value), 1 for
// errors thrown by a command (bad values, bad configurations), 128 + n when signal n
// interrupted it (signals.ts). Commands compute their whole answer before printing it once.
import { Command, CommanderError } from 'commander';
import packageJson from '../package.json' with { type: 'json' };
import { registerPlan } from './commands/plan.ts';
import { registerHc } from './commands/hc.ts';
import { registerPrefill } from './commands/prefill.ts';
import { registerBench } from './commands/bench.ts';
import { registerWeights } from './commands/weights.ts';
import { registerLaunch } from './commands/launch.ts';
import { registerXcheck } from './commands/xcheck.ts';
import { registerModel } from './commands/model.ts';
import { refuseRepeatedOptions } from './repeatedOptions.ts';

const USAGE_EXIT_CODE = 2;

function buildProgram(): Command {
  const program = new Command('hcsp')
    .description('sequence-parallel hyper-connection residual streams of the Qwen3.8-Flash-Next decoder')
    .version(packageJson.version, '-V, --version', 'print the version of hcsp')
    // Set before registering subcommands: they inherit both settings.
    .exitOverride()
    .configureOutput({ outputError: () => {} })
    .showHelpAfterError(false);
  registerPlan(program);
  registerHc(program);
  registerPrefill(program);
  registerBench(program);
  registerWeights(program);
  registerLaunch(program);
  registerXcheck(program);
  registerModel(program);
  refuseRepeatedOptions(program);
  return program;
}

async function main(argv: string[]): Promise<number> {
  try {
    await buildProgram().parseAsync(argv);
    return 0;
  } catch (err) {
    if (err instanceof CommanderError) {
      // --help and --version have already printed themselves and exit 0; a missing
      // subcommand has printed the help to stderr.
      if (err.exitCode === 0) return 0;
      if (err.code === 'commander.help') return USAGE_EXIT_CODE;
      process.stderr.write(`hcsp: ${err.message.replace(/^error: /, '')}\n`);
      return USAGE_EXIT_CODE;
    }
    process.stderr.write(`hcsp: ${err instanceof Error ? err.message : String(err)}\n`);
    return 1;
  }
}

process.exitCode = await main(process.argv);
