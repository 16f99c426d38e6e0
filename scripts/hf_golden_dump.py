#!/usr/bin/env python3
"""A golden dump from the Hugging Face Qwen4-Exp module, for `hcsp xcheck --golden`.

Runs transformers' Qwen4-Exp text model (src/transformers/models/qwen4_exp/modeling_qwen4_exp.py)
on a prompt's ids with forward hooks and writes the tensors under the names of the README's
"Golden dumps" table, in the shapes and dtypes `hcsp prefill --dump` writes, so that

    python scripts/hf_golden_dump.py --model /models/m --ids prompt.json --out hf.safetensors
    npx hcsp xcheck --config /models/m --weights /models/m --golden hf.safetensors --compare cpu

compares hcsp's run with the module's tensor by tensor. Needs torch, transformers (with
qwen4_exp) and safetensors; not run in hcsp's tests (no PyTorch there): test/hfGoldenDumpScript.test.ts
checks its names and the tuple elements it takes against the module's return values.

What the module returns, and so what each hook keeps (modeling_qwen4_exp.py):
  Qwen4ExpTextGatedResidual (attn_/mlp_hyper_connection): (mixed_input, hyper_input,
      injection_weights); the mix, the sub-layer's input, is element 0 ([T, 4H] streams are 1);
  hyper_connection_mixer (the same class without block_inject_weight): mixed_input alone;
  Qwen4ExpTextAttention (self_attn): (attn_output, attn_weights); Qwen4ExpTextGatedDeltaNet
      (linear_attn): the output alone; Qwen4ExpTextSparseMoeBlock (mlp): the output alone;
  Qwen4ExpTextTopKRouter (mlp.gate): (router_logits, router_scores, router_indices);
  Qwen4ExpTextQSAIndexer (self_attn.indexer): the selected-token mask [B, 1, T, T], bool (sdpa,
      True = kept) or float (eager, 0 = kept);
  Qwen4ExpTextNGramEmbedding calls ngram_embedding (an nn.Embedding) on the n-gram ids
      [B, T, heads], head offsets included: its input is layers.{i}.ple.ngram_ids.
The decoder layer adds the PLE output to the streams before attn_hyper_connection, so that
module's input is layers.{i}.ple.out on a PLE layer.
"""

import argparse
import json

import torch
from safetensors.torch import save_file
from transformers import AutoModelForCausalLM

# hcsp's dump names an HF dump cannot carry: the module has no MTP head
# (_keys_to_ignore_on_load_unexpected drops the checkpoint's mtp.*). xcheck lists them as not compared.
NOT_CARRIED = {
    "mtp.logits": "the HF module has no MTP head",
    "mtp.mlp.topk_ids": "the HF module has no MTP head",
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True, help="the model folder (config.json and safetensors)")
    parser.add_argument("--ids", required=True, help="a JSON array of token ids (hcsp prefill --ids)")
    parser.add_argument("--out", required=True, help="the .safetensors file to write")
    parser.add_argument("--logits", choices=["last", "all"], default="last", help="logits rows, as hcsp prefill --logits")
    parser.add_argument("--attn-implementation", choices=["eager", "sdpa"], default="eager")
    args = parser.parse_args()

    with open(args.ids) as f:
        ids = json.load(f)
    if not isinstance(ids, list) or not ids or not all(isinstance(t, int) for t in ids):
        raise SystemExit(f"--ids {args.ids}: expected a non-empty JSON array of integers")
    input_ids = torch.tensor([ids], dtype=torch.long)
    T = input_ids.shape[-1]

    model = AutoModelForCausalLM.from_pretrained(args.model, dtype=torch.bfloat16, attn_implementation=args.attn_implementation)
    model.eval()
    m = model.model.language_model if hasattr(model.model, "language_model") else model.model

    dump = {}

    def keep(name, value, dtype, per_row=False):
        # hcsp's shapes: [T, width] (streams stream-major, as the module's [.., n*H]), [T] per row
        dump[name] = value.detach().reshape((T,) if per_row else (T, -1)).to(dtype).cpu().contiguous()

    def out_hook(module, name, pick=lambda o: o, dtype=torch.bfloat16, per_row=False):
        module.register_forward_hook(lambda mod, a, o: keep(name, pick(o), dtype, per_row))

    def in_hook(module, name, dtype=torch.bfloat16):
        # the first input, positional or the module's first keyword
        def hook(mod, a, kw):
            keep(name, a[0] if a else next(iter(kw.values())), dtype)

        module.register_forward_pre_hook(hook, with_kwargs=True)

    def kept_count(mask):
        # keys each query row attends to: the indexer's mask marks them True (sdpa) or 0 (eager)
        kept = mask if mask.dtype == torch.bool else mask == 0
        return kept.sum(dim=-1)

    out_hook(m.embed_tokens, "embed")
    for i, layer in enumerate(m.layers):
        in_hook(layer, f"layers.{i}.in")
        if layer.ple is not None:
            in_hook(layer.ple.ple_embedding.ngram_embedding, f"layers.{i}.ple.ngram_ids", dtype=torch.int64)
            in_hook(layer.attn_hyper_connection, f"layers.{i}.ple.out")
        out_hook(layer.attn_hyper_connection, f"layers.{i}.attn_hc.mixed", lambda o: o[0])
        if layer.layer_type == "linear_attention":
            out_hook(layer.linear_attn, f"layers.{i}.attn.out")
        else:
            out_hook(layer.self_attn, f"layers.{i}.attn.out", lambda o: o[0])
            out_hook(layer.self_attn.indexer, f"layers.{i}.attn.kept", kept_count, dtype=torch.int32, per_row=True)
        out_hook(layer.mlp_hyper_connection, f"layers.{i}.mlp_hc.mixed", lambda o: o[0])
        out_hook(layer.mlp, f"layers.{i}.mlp.out")
        out_hook(layer.mlp.gate, f"layers.{i}.mlp.topk_ids", lambda o: o[2], dtype=torch.int32)
    in_hook(m.hyper_connection_mixer, "final.in")
    out_hook(m.hyper_connection_mixer, "final.mixed")

    with torch.no_grad():
        out = model(input_ids=input_ids, use_cache=False)
    logits = out.logits[0, -1:] if args.logits == "last" else out.logits[0]
    dump["logits"] = logits.to(torch.bfloat16).cpu().contiguous()
    dump["input_ids"] = input_ids[0].cpu().contiguous()
    save_file(dump, args.out)
    print(f"wrote {args.out}: {len(dump)} tensors; not carried: " + ", ".join(f"{k} ({v})" for k, v in NOT_CARRIED.items()))


if __name__ == "__main__":
    main()
