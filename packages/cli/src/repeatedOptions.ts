// A value option given twice (`--tokens 8 --tokens 16`) is a usage error: commander would let
// the last one silently win, and a command line pieced together from two sources (a script's
// defaults, then the user's) would run with a value nobody checked.
import type { Command } from 'commander';

/** Makes every value option of `cmd` and its subcommands refuse a second occurrence (exit 2). */
export function refuseRepeatedOptions(cmd: Command): void {
  for (const option of cmd.options) {
    // flags without a value (--force) and variadic options may repeat harmlessly
    if (!(option.required || option.optional) || option.variadic) continue;
    let given = false;
    cmd.on(`option:${option.name()}`, () => {
      if (given)
        cmd.error(`option '${option.flags}' given more than once (the last would silently win); give it once`, { exitCode: 2, code: 'hcsp.repeatedOption' });
      given = true;
    });
  }
  for (const sub of cmd.commands) refuseRepeatedOptions(sub);
}
