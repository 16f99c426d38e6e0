// --help states each option's default once (issue 25: `(default: 4) (default: "4")` in plan,
// prefill and xcheck: a hand-written default beside commander's own).
import { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { registerBench } from './commands/bench.ts';
import { registerHc } from './commands/hc.ts';
import { registerLaunch } from './commands/launch.ts';
import { registerModel } from './commands/model.ts';
import { registerPlan } from './commands/plan.ts';
import { registerPrefill } from './commands/prefill.ts';
import { registerWeights } from './commands/weights.ts';
import { registerXcheck } from './commands/xcheck.ts';

describe('--help', () => {
  const program = new Command('hcsp');
  for (const register of [registerPlan, registerHc, registerPrefill, registerBench, registerWeights, registerLaunch, registerXcheck, registerModel])
    register(program);

  it('gives every option of every command its default at most once', () => {
    const seen: string[] = [];
    for (const cmd of program.commands) {
      const help = cmd.createHelp();
      for (const option of cmd.options) {
        const text = help.optionDescription(option);
        seen.push(`${cmd.name()} ${option.flags}`);
        // commander appends "(default: ...)" where the option has a default: then the description must not state it too
        if (text !== option.description) expect(option.description, `${cmd.name()} ${option.flags}: ${text}`).not.toMatch(/\(default:/);
      }
    }
    expect(seen).toContain('xcheck --tp <n>');
  });

  it('plan and prefill print --tp and --config defaults as written: (default: 4), (default: small)', () => {
    for (const name of ['plan', 'prefill']) {
      const cmd = program.commands.find((c) => c.name() === name)!;
      const help = cmd.createHelp();
      const of = (long: string) => help.optionDescription(cmd.options.find((o) => o.long === long)!);
      expect(of('--tp')).toMatch(/\(default: 4\)$/);
      expect(of('--config')).toMatch(/\(default: small\)$/);
    }
  });
});
