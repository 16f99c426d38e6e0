// The PyTorch golden-dump recipe, scripts/hf_golden_dump.py (issue 23 item 4), held against the
// Hugging Face module's return values as read in transformers'
// src/transformers/models/qwen4_exp/modeling_qwen4_exp.py (381161e9b75f0a4db5ab433fc0e991161f75c4e2)
// and against the names, dtypes and shapes hcsp's own dump has. PyTorch is not installed here:
// the script is parsed, not run. The README's earlier snippet took o[1] of the hyper-connections
// (their [T, 4H] input streams) for the mix: the checker refuses exactly that.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { MODEL_SUB_LAYERS, preparePrefill, TINY } from '@hcsp/core';
import { describe, expect, it } from 'vitest';

const SCRIPT = fileURLToPath(new URL('../scripts/hf_golden_dump.py', import.meta.url));

/**
 * What each hooked module's forward returns (a tuple's elements by name, or one tensor), from
 * modeling_qwen4_exp.py: Qwen4ExpTextGatedResidual `return mixed_input, hyper_input,
 * injection_weights` (and `return mixed_input` without block_inject_weight: the final mixer);
 * Qwen4ExpTextAttention `return attn_output, attn_weights`; Qwen4ExpTextGatedDeltaNet `return
 * output`; Qwen4ExpTextSparseMoeBlock `return expert_output`; Qwen4ExpTextTopKRouter `return
 * router_logits, router_scores, router_indices`; Qwen4ExpTextQSAIndexer `return
 * selected_token_mask`; nn.Embedding the looked-up rows.
 */
const RETURNS: Record<string, string | string[]> = {
  'm.embed_tokens': 'embeddings',
  'layer.attn_hyper_connection': ['mixed_input', 'hyper_input', 'injection_weights'],
  'layer.mlp_hyper_connection': ['mixed_input', 'hyper_input', 'injection_weights'],
  'm.hyper_connection_mixer': 'mixed_input',
  'layer.self_attn': ['attn_output', 'attn_weights'],
  'layer.linear_attn': 'output',
  'layer.mlp': 'expert_output',
  'layer.mlp.gate': ['router_logits', 'router_scores', 'router_indices'],
  'layer.self_attn.indexer': 'selected_token_mask',
};

/**
 * The first input of each pre-hooked module as the caller passes it: the decoder layer gets the
 * streams entering it; attn_hyper_connection the streams after the PLE add (the layer adds
 * self.ple(...) first); ngram_embedding the n-gram ids (offsets added); the mixer the streams
 * after the last layer.
 */
const INPUTS: Record<string, string> = {
  layer: 'layer_streams',
  'layer.attn_hyper_connection': 'streams_after_ple',
  'layer.ple.ple_embedding.ngram_embedding': 'ngram_ids',
  'm.hyper_connection_mixer': 'final_streams',
};

/** Each dump name's source: the module's output element or input, as the table defines the name. */
const WANT: Record<string, string[]> = {
  embed: ['out m.embed_tokens embeddings'],
  'layers.{i}.in': ['in layer layer_streams'],
  'layers.{i}.ple.ngram_ids': ['in layer.ple.ple_embedding.ngram_embedding ngram_ids'],
  'layers.{i}.ple.out': ['in layer.attn_hyper_connection streams_after_ple'],
  'layers.{i}.attn_hc.mixed': ['out layer.attn_hyper_connection mixed_input'],
  'layers.{i}.attn.out': ['out layer.linear_attn output', 'out layer.self_attn attn_output'],
  'layers.{i}.attn.kept': ['out layer.self_attn.indexer selected_token_mask'],
  'layers.{i}.mlp_hc.mixed': ['out layer.mlp_hyper_connection mixed_input'],
  'layers.{i}.mlp.out': ['out layer.mlp expert_output'],
  'layers.{i}.mlp.topk_ids': ['out layer.mlp.gate router_indices'],
  'final.in': ['in m.hyper_connection_mixer final_streams'],
  'final.mixed': ['out m.hyper_connection_mixer mixed_input'],
};

const HOOK = /^\s*(out_hook|in_hook)\(([\w.]+), f?"([^"]+)"(.*)\)\s*$/;

interface Hook {
  name: string;
  source: string;
  dtype: string;
  perRow: boolean;
}

/** The script's hooks (name, what it takes, dtype) and the problems found in how they take it. */
function readScript(text: string): { hooks: Hook[]; direct: string[]; notCarried: string[]; problems: string[] } {
  const hooks: Hook[] = [];
  const problems: string[] = [];
  for (const line of text.split('\n')) {
    const m = HOOK.exec(line);
    if (!m) continue;
    const [, kind, module, name, rest] = m;
    const dtype = /dtype=torch\.(\w+)/.exec(rest)?.[1] ?? 'bfloat16';
    const perRow = /per_row=True/.test(rest);
    const pick = /^, (lambda o: o\[(\d+)\]|kept_count)/.exec(rest);
    let source: string;
    if (kind === 'in_hook') {
      source = `in ${module} ${INPUTS[module] ?? '?'}`;
      if (!INPUTS[module]) problems.push(`${name}: input of ${module}, which the recipe does not know`);
    } else {
      const ret = RETURNS[module];
      if (ret === undefined) {
        problems.push(`${name}: output of ${module}, whose return value is not known`);
        continue;
      }
      if (pick?.[2] !== undefined) {
        const k = Number(pick[2]);
        if (!Array.isArray(ret)) problems.push(`${name}: o[${k}] of ${module}, which returns one tensor (${ret})`);
        else if (k >= ret.length) problems.push(`${name}: o[${k}] of ${module}, which returns ${ret.length} values`);
        source = `out ${module} ${Array.isArray(ret) ? ret[k] : ret}`;
      } else {
        if (Array.isArray(ret)) problems.push(`${name}: the whole tuple of ${module} (${ret.join(', ')})`);
        source = `out ${module} ${Array.isArray(ret) ? 'tuple' : ret}`;
      }
    }
    hooks.push({ name, source, dtype, perRow });
  }
  const direct = [...text.matchAll(/^\s*dump\["([^"]+)"\] = /gm)].map((x) => x[1]);
  const notCarried = [...(/NOT_CARRIED = \{([^}]*)\}/.exec(text)?.[1] ?? '').matchAll(/"([^"]+)": "/g)].map((x) => x[1]);
  for (const h of hooks) {
    const want = WANT[h.name];
    if (!want) problems.push(`${h.name}: not a name hcsp's dump has`);
    else if (!want.includes(h.source)) problems.push(`${h.name}: takes ${h.source}, the name is ${want.join(' or ')}`);
  }
  for (const [name, want] of Object.entries(WANT)) {
    for (const w of want) if (!hooks.some((h) => h.name === name && h.source === w)) problems.push(`${name}: no hook takes ${w}`);
  }
  return { hooks, direct, notCarried, problems };
}

/** hcsp's dump names with the layer index as {i}, and the dtype each is written in (file dtypes as torch names). */
function hcspDumpNames(): Map<string, string> {
  const p = preparePrefill({ config: TINY, tokens: 8, tp: 1, sp: 'off', reduce: 'ring', seed: 1, subLayers: MODEL_SUB_LAYERS, dump: true });
  const out = new Map<string, string>([['input_ids', 'int64']]);
  for (const [name, id] of Object.entries(p.outputs.dumpValues)) {
    const v = p.graph.values[id];
    // prefillDump widens the n-gram ids to int64, as the reference stores ids
    const dtype = name.endsWith('.ngram_ids') ? 'int64' : v.dtype === 'i32' ? 'int32' : 'bfloat16';
    out.set(name.replace(/^layers\.\d+\./, 'layers.{i}.'), v.shape.length === 1 && name !== 'input_ids' ? `${dtype} [T]` : dtype);
  }
  return out;
}

describe('scripts/hf_golden_dump.py: the PyTorch golden-dump recipe', () => {
  const text = readFileSync(SCRIPT, 'utf8');

  it("takes every name from the element of the HF module's return value (or input) that the name is, in hcsp's dtypes and shapes", () => {
    const { hooks, problems } = readScript(text);
    expect(problems).toEqual([]);
    const names = hcspDumpNames();
    for (const h of hooks) expect(`${h.dtype}${h.perRow ? ' [T]' : ''}`, h.name).toBe(names.get(h.name));
  });

  it("writes every name of hcsp's dump, or says it cannot carry it (mtp.logits, mtp.mlp.topk_ids: the HF module has no MTP head)", () => {
    const { hooks, direct, notCarried } = readScript(text);
    const written = new Set([...hooks.map((h) => h.name), ...direct]);
    expect(notCarried).toEqual(['mtp.logits', 'mtp.mlp.topk_ids']);
    expect([...hcspDumpNames().keys()].filter((n) => !written.has(n)).sort()).toEqual(notCarried);
    expect([...written].filter((n) => !hcspDumpNames().has(n))).toEqual([]);
  });

  it("refuses the old snippet's o[1] for the mix, a tuple taken whole, and a name hcsp does not dump", () => {
    const o1 = text.replace(
      'out_hook(layer.attn_hyper_connection, f"layers.{i}.attn_hc.mixed", lambda o: o[0])',
      'out_hook(layer.attn_hyper_connection, f"layers.{i}.attn_hc.mixed", lambda o: o[1])',
    );
    expect(o1).not.toBe(text);
    expect(readScript(o1).problems).toEqual([
      'layers.{i}.attn_hc.mixed: takes out layer.attn_hyper_connection hyper_input, the name is out layer.attn_hyper_connection mixed_input',
      'layers.{i}.attn_hc.mixed: no hook takes out layer.attn_hyper_connection mixed_input',
    ]);
    const mlp = text.replace('f"layers.{i}.mlp_hc.mixed", lambda o: o[0])', 'f"layers.{i}.mlp_hc.mixed", lambda o: o[1])');
    expect(readScript(mlp).problems[0]).toBe(
      'layers.{i}.mlp_hc.mixed: takes out layer.mlp_hyper_connection hyper_input, the name is out layer.mlp_hyper_connection mixed_input',
    );
    const whole = text.replace('out_hook(layer.self_attn, f"layers.{i}.attn.out", lambda o: o[0])', 'out_hook(layer.self_attn, f"layers.{i}.attn.out")');
    expect(readScript(whole).problems[0]).toBe('layers.{i}.attn.out: the whole tuple of layer.self_attn (attn_output, attn_weights)');
    const ids = text.replace('f"layers.{i}.mlp.topk_ids", lambda o: o[2]', 'f"layers.{i}.mlp.topk_ids", lambda o: o[1]');
    expect(readScript(ids).problems[0]).toBe('layers.{i}.mlp.topk_ids: takes out layer.mlp.gate router_scores, the name is out layer.mlp.gate router_indices');
  });

  const python = spawnSync('python3', ['--version'], { encoding: 'utf8', timeout: 10_000 }).status === 0;
  it.skipIf(!python)('is valid Python (parsed by python3; torch is not needed to parse it)', () => {
    const r = spawnSync('python3', ['-c', 'import ast, sys; ast.parse(open(sys.argv[1]).read())', SCRIPT], { encoding: 'utf8', timeout: 30_000 });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
  });
});
