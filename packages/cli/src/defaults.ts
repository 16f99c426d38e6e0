// Defaults shared by the commands (plan and prefill used to differ), named in --help.
import { Option } from 'commander';
import { SP_MIN_TOKENS_DEFAULT, SP_MIN_TOKENS_ENV } from '@hcsp/core';

export const DEFAULT_CONFIG = 'small';
export const DEFAULT_TP = '4';

// The defaults are commander's to print, once: a hand-written "(default: 4)" beside the
// option's default printed both ("(default: 4) (default: "4")").
export const CONFIG_HELP = 'model configuration: a preset (flash-next, the production model; small; tiny) or a Hugging Face config.json or model folder';
export const TP_HELP = 'tensor-parallel size, a positive integer dividing the head counts';

/** --config with its default, printed as people write it (commander quotes a string default) */
export function configOption(): Option {
  return new Option('--config <name>', CONFIG_HELP).default(DEFAULT_CONFIG, DEFAULT_CONFIG);
}

/** --tp with its default; `value` names the argument in --help (<n>, <N>) */
export function tpOption(value = '<n>'): Option {
  return new Option(`--tp ${value}`, TP_HELP).default(DEFAULT_TP, DEFAULT_TP);
}

/** The environment section of --help for commands that apply the SP gate. */
export const SP_ENV_HELP = `
Environment:
  ${SP_MIN_TOKENS_ENV}  token floor of the sequence-parallel gate: shard only when T >= it
    (and T > 1024); 0 disables sharding; unset: ${SP_MIN_TOKENS_DEFAULT}. A malformed value is an
    error, whatever --sp or --sp-min-tokens say.`;
